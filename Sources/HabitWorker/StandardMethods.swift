import JSONRPC

extension MethodRegistry {
    /// Every method the worker serves, in the order of the OpenRPC document.
    static let standard: MethodRegistry = {
        var registry = MethodRegistry()
        registry.register(SystemPing.self)
        registry.register(SystemHealth.self)
        registry.register(ProfileGet.self)
        registry.register(ProfileSet.self)
        registry.register(HabitsCreate.self)
        registry.register(HabitsUpdate.self)
        registry.register(HabitsDeactivate.self)
        registry.register(HabitsActivate.self)
        registry.register(HabitsDelete.self)
        registry.register(HabitsList.self)
        registry.register(HabitsHistory.self)
        registry.register(DayGet.self)
        registry.register(CompletionsSet.self)
        registry.register(CompletionsToggle.self)
        registry.register(SkipsSetRange.self)
        registry.register(WeekCounts.self)
        registry.register(ListsCreate.self)
        registry.register(ListsUpdate.self)
        registry.register(ListsDelete.self)
        registry.register(ListsList.self)
        registry.register(TasksCreate.self)
        registry.register(TasksUpdate.self)
        registry.register(TasksDelete.self)
        registry.register(TasksComplete.self)
        registry.register(TasksUncomplete.self)
        registry.register(TasksCycle.self)
        registry.register(TasksSetState.self)
        registry.register(TasksToday.self)
        registry.register(TasksList.self)
        registry.register(RPCDiscover.self)
        return registry
    }()
}
