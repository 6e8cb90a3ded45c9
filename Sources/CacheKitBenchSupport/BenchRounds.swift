import Foundation

/// One measured case of a benchmark: a subject (with its policy, if it has one) on a thread
/// count, and the closure that runs it once and returns ns/op.
package struct BenchCase {
    package var subject: String
    package var policy: String
    package var threads: Int
    package var run: () -> Double

    package init(_ subject: String, policy: String = "", threads: Int = 1, run: @escaping () -> Double) {
        self.subject = subject
        self.policy = policy
        self.threads = threads
        self.run = run
    }
}

/// A case's figure: the median ns/op over the rounds, and each round's.
package struct BenchResult: Codable {
    package var subject: String
    package var policy: String
    package var workload: String
    package var threads: Int
    package var nsPerOp: Double
    /// ns/op of each round, in round order (not in the JSON).
    package var rounds: [Double] = []

    enum CodingKeys: String, CodingKey {
        case subject, policy, workload, threads, nsPerOp
    }

    /// This case's cost over `baseline`'s: the median of the per-round ratios. Both ran in
    /// each round, one after the other, so a slow spell on a shared machine slows both and
    /// cancels out, which a ratio of the two medians does not do.
    package func ratio(to baseline: BenchResult) -> Double {
        let ratios = zip(rounds, baseline.rounds).map { $0 / $1 }.sorted()
        guard !ratios.isEmpty else { return nsPerOp / baseline.nsPerOp }
        return ratios.count % 2 == 1
            ? ratios[ratios.count / 2]
            : (ratios[ratios.count / 2 - 1] + ratios[ratios.count / 2]) / 2
    }
}

extension [BenchResult] {
    /// The result of `subject` with `policy` on `workload` and `threads` threads, if it ran.
    package func find(_ subject: String, _ policy: String, _ workload: String, threads: Int = 1) -> BenchResult? {
        first { $0.subject == subject && $0.policy == policy && $0.workload == workload && $0.threads == threads }
    }

    /// Prints the results as a JSON array (sorted keys, for diffs).
    package func printJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(self), as: UTF8.self))
    }
}

/// Runs `cases` of `workload` round after round: each round runs every case once, so a noisy
/// moment on a shared machine hits all subjects alike and the medians stay comparable.
/// Progress goes to standard error unless `quiet`.
package func runRounds(
    _ cases: [BenchCase],
    workload: String,
    repetitions: Int,
    quiet: Bool
) -> [BenchResult] {
    var samples = Array(repeating: [Double](), count: cases.count)
    for round in 0..<repetitions {
        if !quiet {
            FileHandle.standardError.write(Data("  \(workload): round \(round + 1) of \(repetitions)\n".utf8))
        }
        for (i, c) in cases.enumerated() { samples[i].append(c.run()) }
    }
    return cases.indices.map { i in
        let sorted = samples[i].sorted()
        return BenchResult(
            subject: cases[i].subject,
            policy: cases[i].policy,
            workload: workload,
            threads: cases[i].threads,
            nsPerOp: sorted[sorted.count / 2],
            rounds: samples[i]
        )
    }
}

/// Warns on standard error when the benchmark runs from a debug build.
package func warnIfDebug() {
    #if DEBUG
    FileHandle.standardError.write(
        Data("warning: this is a debug build; figures are meaningless. Use swift run -c release.\n".utf8)
    )
    #endif
}

/// Formats a ratio as `1.23x`.
package func formatRatio(_ value: Double) -> String { String(format: "%.2fx", value) }
