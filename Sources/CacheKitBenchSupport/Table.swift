/// Prints `rows` under `header` in aligned columns, with a rule under the header. Columns whose
/// index is in `rightAligned` (numbers) are right-aligned.
package func printAligned(header: [String], rows: [[String]], rightAligned: Set<Int>) {
    let all = [header] + rows
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    for (i, row) in all.enumerated() {
        let cells = row.enumerated().map { column, cell in
            let pad = String(repeating: " ", count: widths[column] - cell.count)
            return rightAligned.contains(column) ? pad + cell : cell + pad
        }
        print(cells.joined(separator: "  "))
        if i == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
}
