// `Cache` guards all of its state with its mutex and runs handlers outside it; its handlers are
// `@Sendable`. It is safe to share exactly when what it stores is.
extension Cache: @unchecked Sendable where Key: Sendable, Value: Sendable {}
