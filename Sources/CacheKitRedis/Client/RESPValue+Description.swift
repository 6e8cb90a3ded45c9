#if Redis
extension RESPValue: CustomStringConvertible {
    /// A short rendering for messages: strings quoted, binary bytes escaped, long values cut.
    public var description: String {
        var text = ""
        render(into: &text, budget: 200)
        return text
    }

    private func render(into text: inout String, budget: Int) {
        guard text.utf8.count < budget else {
            text += "…"
            return
        }
        switch self {
        case .simpleString(let string): text += "+\(string.debugDescription)"
        case .blobString(let bytes):
            let shown = String(decoding: bytes.prefix(budget), as: UTF8.self)
            text += shown.debugDescription + (bytes.count > budget ? "…" : "")
        case .null: text += "null"
        case .integer(let value): text += String(value)
        case .double(let value): text += String(value)
        case .boolean(let value): text += String(value)
        case .bigNumber(let value): text += "(\(value)"
        case .verbatimString(let string): text += "=\(string.debugDescription)"
        case .error(let message): text += "-\(message.debugDescription)"
        case .array(let elements): renderElements(elements, open: "[", close: "]", into: &text, budget: budget)
        case .set(let elements): renderElements(elements, open: "~[", close: "]", into: &text, budget: budget)
        case .push(let elements): renderElements(elements, open: ">[", close: "]", into: &text, budget: budget)
        case .map(let entries):
            text += "{"
            for (index, entry) in entries.enumerated() {
                if index > 0 { text += ", " }
                entry.key.render(into: &text, budget: budget)
                text += ": "
                entry.value.render(into: &text, budget: budget)
                if text.utf8.count >= budget { break }
            }
            text += "}"
        }
    }

    private func renderElements(
        _ elements: [RESPValue],
        open: String,
        close: String,
        into text: inout String,
        budget: Int
    ) {
        text += open
        for (index, element) in elements.enumerated() {
            if index > 0 { text += ", " }
            element.render(into: &text, budget: budget)
            if text.utf8.count >= budget { break }
        }
        text += close
    }
}
#endif
