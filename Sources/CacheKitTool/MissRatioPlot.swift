import CacheKitSimulator
import Foundation

/// The miss-ratio curve (miss ratio against cache size) of every policy in a simulation, as a
/// standalone SVG document that a browser shows.
enum MissRatioPlot {
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]

    static func svg(_ results: [SimulationResult], title: String) -> String {
        let width = 720.0
        let height = 440.0
        let left = 70.0
        let right = 150.0
        let top = 40.0
        let bottom = 50.0
        let sizes = Set(results.map(\.size)).sorted()
        let policies = results.map(\.policy).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let maxSize = Double(sizes.last ?? 1)
        let minSize = Double(sizes.first ?? 0)
        let span = max(1, maxSize - minSize)
        func x(_ size: Int) -> Double {
            sizes.count == 1
                ? left + (width - left - right) / 2 : left + (Double(size) - minSize) / span * (width - left - right)
        }
        func y(_ ratio: Double) -> Double { top + ratio * (height - top - bottom) }  // miss ratio 0 at the top
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))"
                font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="20" font-size="14">Miss ratio by cache size: \(escape(title))</text>

            """
        for tick in stride(from: 0.0, through: 1.0, by: 0.25) {
            svg += """
                <line x1="\(left)" y1="\(y(tick))" x2="\(width - right)" y2="\(y(tick))" stroke="#ddd"/>
                <text x="\(left - 8)" y="\(y(tick) + 4)" text-anchor="end">\(String(format: "%.2f", tick))</text>

                """
        }
        for size in sizes {
            svg += "<text x=\"\(x(size))\" y=\"\(height - bottom + 18)\" text-anchor=\"middle\">\(size)</text>\n"
        }
        svg +=
            "<text x=\"\((left + width - right) / 2)\" y=\"\(height - 10)\" "
            + "text-anchor=\"middle\">cache size (entries)</text>\n"
        svg +=
            "<text x=\"16\" y=\"\((top + height - bottom) / 2)\" transform=\"rotate(-90 16 "
            + "\((top + height - bottom) / 2))\" text-anchor=\"middle\">miss ratio</text>\n"
        for (i, policy) in policies.enumerated() {
            let color = colors[i % colors.count]
            let points = results.filter { $0.policy == policy }.sorted { $0.size < $1.size }
            let path = points.map { String(format: "%.1f,%.1f", x($0.size), y($0.missRatio)) }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(path)\"/>\n"
            for p in points {
                svg += String(
                    format: "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%@\"/>\n",
                    x(p.size),
                    y(p.missRatio),
                    color
                )
            }
            let ly = top + 10 + Double(i) * 18
            svg +=
                "<line x1=\"\(width - right + 15)\" y1=\"\(ly)\" x2=\"\(width - right + 35)\" "
                + "y2=\"\(ly)\" stroke=\"\(color)\" stroke-width=\"2\"/>\n"
            svg += "<text x=\"\(width - right + 40)\" y=\"\(ly + 4)\">\(escape(policy))</text>\n"
        }
        return svg + "</svg>\n"
    }

    /// `text` as XML character data: markup escaped, and control characters that XML 1.0
    /// does not allow (any below U+0020 but tab, newline and return) shown as U+FFFD.
    static func escape(_ text: String) -> String {
        let allowed = String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { $0.value < 0x20 && ![0x09, 0x0A, 0x0D].contains($0.value) ? "\u{FFFD}" : $0 }
            )
        )
        return allowed.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
