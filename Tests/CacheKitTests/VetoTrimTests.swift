import Testing

@testable import CacheKit

/// Every transition of `_VetoTrim`, the state machine of a trim that asks an eviction veto.
@Suite("Veto trim")
struct VetoTrimTests {
    typealias Trim = _VetoTrim<Int, String>

    /// Candidates for keys `keys`, in slots numbered as the keys, each of cost 1.
    func candidates(_ keys: [Int]) -> [_Candidate<Int, String>] {
        keys.map { _Candidate(slot: Int32($0), version: 1, key: $0, value: "\($0)", cost: 1, reason: .evictedForCount) }
    }

    /// A target of at most `count` entries.
    func goal(_ count: Int) -> _TrimTarget { _TrimTarget(maxCount: count, maxCost: .max) }

    /// The key an action asks about, if it asks.
    func asked(_ action: Trim.Action) -> Int? {
        if case .ask(let candidate) = action { return candidate.key }
        return nil
    }

    /// The keys an action evicts, if it evicts.
    func evicted(_ action: Trim.Action) -> [Int]? {
        if case .evict(let approved) = action { return approved.map(\.key) }
        return nil
    }

    func isPropose(_ action: Trim.Action) -> Bool {
        if case .propose = action { return true }
        return false
    }

    func isFinish(_ action: Trim.Action) -> Bool {
        if case .finish = action { return true }
        return false
    }

    @Test("a trim starts by proposing, in its first round")
    func startsByProposing() {
        let trim = Trim()
        #expect(isPropose(trim.start))
        #expect(trim.rounds == 1 && trim.vetoed.isEmpty)
    }

    @Test("no candidates: the trim finishes")
    func noCandidatesFinishes() {
        var trim = Trim()
        #expect(isFinish(trim.proposed([], goal: goal(0), count: 3, cost: 3)))
        #expect(trim.rounds == 1)
    }

    @Test("candidates: the veto is asked about the first, with the reason the target gives")
    func asksAboutTheFirst() {
        var trim = Trim()
        let action = trim.proposed(
            candidates([1, 2]),
            goal: _TrimTarget(maxCount: .max, maxCost: 1),
            count: 3,
            cost: 3
        )
        guard case .ask(let candidate) = action else {
            Issue.record("expected .ask, got \(action)")
            return
        }
        #expect(candidate.key == 1 && candidate.reason == .evictedForCost)
    }

    @Test("approvals that meet the target end the questions and evict exactly those approved")
    func approvalsMeetTheTarget() {
        var trim = Trim()
        // 4 entries, at most 2: two approvals meet the target; the third candidate is not asked.
        #expect(asked(trim.proposed(candidates([1, 2, 3]), goal: goal(2), count: 4, cost: 4)) == 1)
        #expect(asked(trim.answered(true)) == 2)
        #expect(evicted(trim.answered(true)) == [1, 2])
        #expect(isPropose(trim.evicted()))
        #expect(trim.rounds == 2)
    }

    @Test("a refusal is remembered and the next candidate is asked")
    func refusalAsksTheNext() {
        var trim = Trim()
        #expect(asked(trim.proposed(candidates([1, 2]), goal: goal(1), count: 2, cost: 2)) == 1)
        #expect(asked(trim.answered(false)) == 2)
        #expect(trim.vetoed == [_SlotVersion(slot: 1, version: 1)])
        #expect(evicted(trim.answered(true)) == [2])
    }

    @Test("only refusals, some new: the trim proposes again, skipping them")
    func onlyNewRefusalsProposeAgain() {
        var trim = Trim()
        _ = trim.proposed(candidates([1, 2]), goal: goal(0), count: 2, cost: 2)
        _ = trim.answered(false)
        #expect(isPropose(trim.answered(false)))
        #expect(trim.rounds == 2 && trim.vetoed.count == 2)
    }

    @Test("candidates all asked before, none refused anew: the trim finishes")
    func noNewRefusalsFinish() {
        var trim = Trim()
        _ = trim.proposed(candidates([1]), goal: goal(0), count: 2, cost: 2)
        #expect(isPropose(trim.answered(false)))
        // The next round finds the target already met: nothing asked, nothing refused.
        #expect(isFinish(trim.proposed(candidates([2]), goal: goal(5), count: 2, cost: 2)))
        #expect(trim.rounds == 2)
    }

    @Test("approvals that do not meet the target are evicted, and the next round begins")
    func partialApprovalsEvictThenPropose() {
        var trim = Trim()
        _ = trim.proposed(candidates([1, 2]), goal: goal(0), count: 3, cost: 3)
        _ = trim.answered(true)
        #expect(evicted(trim.answered(false)) == [1])
        #expect(isPropose(trim.evicted()))
        #expect(trim.rounds == 2 && trim.vetoed.count == 1)
    }
}

/// Every transition of `_VetoedWrite`, which decides how a write goes when a veto may be
/// installed.
@Suite("Vetoed write")
struct VetoedWriteTests {
    @Test("without a veto, or when the cache kept a value, the write just finishes")
    func finishes() {
        let write = _VetoedWrite()
        #expect(write.mayStopForRoom)
        #expect(write.wrote(keptValue: false, rejected: false, deferredTrim: false) == .finish)
        #expect(write.wrote(keptValue: false, rejected: true, deferredTrim: false) == .finish)
        #expect(write.wrote(keptValue: true, rejected: false, deferredTrim: true) == .finish)
    }

    @Test("a rejected write with a veto installed finishes, reporting whether the cache is over a limit")
    func rejectedChecksLimits() {
        #expect(_VetoedWrite().wrote(keptValue: false, rejected: true, deferredTrim: true) == .finishCheckingLimits)
    }

    @Test("a stored write with a veto installed trims outside the lock, asking the veto")
    func storedTrims() {
        #expect(_VetoedWrite().wrote(keptValue: false, rejected: false, deferredTrim: true) == .trim(askingVeto: true))
    }

    @Test("room is made once per write")
    func roomMadeOnce() {
        var write = _VetoedWrite()
        write.neededRoom()
        #expect(!write.mayStopForRoom)
        write.roomMade(refused: false)
        #expect(!write.mayStopForRoom)
        #expect(write.wrote(keptValue: false, rejected: false, deferredTrim: true) == .trim(askingVeto: true))
    }

    @Test("after the veto refused every candidate while making room, the trim does not ask it again")
    func refusedRoomTrimsWithoutAsking() {
        var write = _VetoedWrite()
        write.neededRoom()
        write.roomMade(refused: true)
        #expect(write.wrote(keptValue: false, rejected: false, deferredTrim: true) == .trim(askingVeto: false))
    }
}
