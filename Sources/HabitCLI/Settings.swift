import ArgumentParser
import Foundation

/// Where a setting comes from: its flag, else its environment variable (an empty one counts
/// as unset), else its default. Called only from the `validate()` of an option group or a
/// command, which ArgumentParser runs right after parsing: a malformed or out-of-range value
/// is a `ValidationError` naming its source, and the command exits 64 before doing anything.
enum Setting {
    /// `flagValue`, else the variable parsed as the flag would be, else `fallback`. `expected`
    /// says what a valid value is, for the error message; by default the type's values
    /// ("one of auto, on, off").
    static func resolve<Value: ExpressibleByArgument>(
        _ flagValue: Value?, flag: String, variable: String, default fallback: Value,
        expected: String? = nil, where isValid: (Value) -> Bool = { _ in true }
    ) throws -> Value {
        let expected = expected ?? "one of \(Value.allValueStrings.joined(separator: ", "))"
        if let flagValue {
            guard isValid(flagValue) else { throw ValidationError("\(flag) \(flagValue) is not \(expected)") }
            return flagValue
        }
        guard let text = Environment.string(variable) else { return fallback }
        guard let value = Value(argument: text), isValid(value) else { throw ValidationError("\(variable)=\(text) is not \(expected)") }
        return value
    }

    /// An optional text setting (a path): `flagValue`, else the variable, else `fallback`;
    /// `check` throws what is wrong with a value, and the error names its source.
    static func resolve(_ flagValue: String?, flag: String, variable: String, default fallback: String?,
                        expected: String, check: (String) throws -> Void) throws -> String? {
        let value: String, source: String
        if let flagValue, !flagValue.isEmpty {
            (value, source) = (flagValue, flag)
        } else if let text = Environment.string(variable) {
            (value, source) = (text, variable)
        } else {
            return fallback
        }
        do {
            try check(value)
        } catch {
            throw ValidationError("\(source): not \(expected): \(error)")
        }
        return value
    }

    /// A count, size or duration: a whole number of at least `minimum`.
    static func number(_ flagValue: Int?, flag: String, variable: String, default fallback: Int, minimum: Int = 1) throws -> Int {
        try resolve(flagValue, flag: flag, variable: variable, default: fallback,
                    expected: "a whole number of at least \(minimum)", where: { $0 >= minimum })
    }
}

enum Environment {
    /// The variable's value; unset and empty are the same.
    static func string(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    /// A yes/no setting: 1/true/yes/on or 0/false/no/off; anything else is an error.
    static func boolean(_ name: String) throws -> Bool? {
        guard let text = string(name)?.lowercased() else { return nil }
        switch text {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ValidationError("\(name)=\(text) is not a yes/no value (1/true/yes/on or 0/false/no/off)")
        }
    }
}
