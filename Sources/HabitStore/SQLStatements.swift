/// Splits an SQL script into its statements, the way psql does: at each `;` outside quotes,
/// dollar quotes and comments. Needed where a script cannot go whole: a Citus coordinator
/// forwards the text of some DDL (CREATE TRIGGER, COMMENT, GRANT) to its workers as one
/// prepared statement, which refuses a text of several commands ("cannot insert multiple
/// commands into a prepared statement").
///
/// Knows what the files of `sql/` use: `'…'` with `''`, `E'…'` with backslash escapes,
/// `"…"` identifiers, `$tag$…$tag$` bodies, `--` and nested `/* */` comments. Pieces with
/// nothing but whitespace and comments are dropped; comments inside a statement stay.
public enum SQLStatements {
    public static func split(_ script: String) -> [String] {
        let characters = Array(script.unicodeScalars)
        var statements: [String] = []
        var start = 0
        var index = 0
        var meaningful = false // the current piece has something besides whitespace and comments

        func flush(upTo end: Int) {
            if meaningful {
                var text = String(String.UnicodeScalarView(characters[start..<end]))
                while let last = text.unicodeScalars.last, last.properties.isWhitespace { text.unicodeScalars.removeLast() }
                statements.append(String(text.drop(while: { $0.isWhitespace })))
            }
            start = end + 1
            meaningful = false
        }

        func at(_ offset: Int) -> Unicode.Scalar? {
            index + offset < characters.count ? characters[index + offset] : nil
        }

        while index < characters.count {
            let character = characters[index]
            switch character {
            case "-" where at(1) == "-":
                while index < characters.count, characters[index] != "\n" { index += 1 }
                continue
            case "/" where at(1) == "*":
                var depth = 0
                while index < characters.count {
                    if characters[index] == "/", at(1) == "*" { depth += 1; index += 2; continue }
                    if characters[index] == "*", at(1) == "/" {
                        depth -= 1; index += 2
                        if depth == 0 { break }
                        continue
                    }
                    index += 1
                }
                continue
            case "'":
                meaningful = true
                let escapes = index > 0 && (characters[index - 1] == "E" || characters[index - 1] == "e")
                    && (index < 2 || !isIdentifierPart(characters[index - 2]))
                index += 1
                while index < characters.count {
                    if escapes, characters[index] == "\\" { index += 2; continue }
                    if characters[index] == "'" {
                        if at(1) == "'" { index += 2; continue }
                        break
                    }
                    index += 1
                }
            case "\"":
                meaningful = true
                index += 1
                while index < characters.count {
                    if characters[index] == "\"" {
                        if at(1) == "\"" { index += 2; continue }
                        break
                    }
                    index += 1
                }
            case "$" where index == 0 || !isIdentifierPart(characters[index - 1]):
                meaningful = true
                // $tag$ (tag: letters, digits, underscores, not starting with a digit) or $$.
                var end = index + 1
                while end < characters.count, isIdentifierPart(characters[end]) { end += 1 }
                if end < characters.count, characters[end] == "$",
                   end == index + 1 || !("0"..."9").contains(characters[index + 1]) {
                    let tag = Array(characters[index...end])
                    index = end + 1
                    while index < characters.count {
                        if characters[index] == "$", index + tag.count <= characters.count,
                           Array(characters[index..<index + tag.count]) == tag {
                            index += tag.count - 1
                            break
                        }
                        index += 1
                    }
                }
            case ";":
                flush(upTo: index)
            default:
                if !character.properties.isWhitespace { meaningful = true }
            }
            index += 1
        }
        flush(upTo: characters.count)
        return statements
    }

    private static func isIdentifierPart(_ character: Unicode.Scalar) -> Bool {
        character == "_" || character.properties.isAlphabetic || ("0"..."9").contains(character)
    }
}
