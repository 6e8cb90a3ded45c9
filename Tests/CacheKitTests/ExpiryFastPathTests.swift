import Testing

@testable import CacheKit

/// Drives two `_Expiry`s with the same operations, one through `didWrite`
/// (fast path when it applies) and one through `didWriteInGeneral` only, and checks they end in
/// the same state; also checks that the sweep (nextExpired + didRemove, which pops the head)
/// returns exactly the live slots whose deadline has passed, and that the invariants hold.
@Suite("Expiry write fast path")
struct ExpiryFastPathTests {
    struct Snapshot: Equatable {
        var records: [String]
        var queue: [String]
        var queueCapacity: Int
        var lastStamp: UInt32
        var latest: Int64
        var heap: [String]
        var access: [Int32]
    }

    static func snapshot(_ e: _Expiry, slots: Int) -> Snapshot {
        var records: [String] = []
        for s in 0..<slots {
            let r = e.records[s]
            records.append("\(r.writeDeadline)/\(r.writeStamp)/\(r.heapPosition)")
        }
        var queue: [String] = []
        for i in 0..<e.queueCount {
            let item = e.writeQueue![(e.queueHead + i) & (e.queueCapacity - 1)]
            queue.append("\(item.slot):\(item.stamp)")
        }
        var heap: [String] = []
        for i in 0..<e.heapCount { heap.append("\(e.heap[i].slot):\(e.heap[i].key)") }
        var access: [Int32] = []
        if let idle = e.idle {
            var s = e.accessOrder.head
            while s >= 0 {
                access.append(s)
                s = idle[Int(s)].next
            }
        }
        return Snapshot(
            records: records,
            queue: queue,
            queueCapacity: e.queueCapacity,
            lastStamp: e.lastStamp,
            latest: e.latest,
            heap: heap,
            access: access
        )
    }

    static func deadline(_ e: _Expiry, _ slot: Int32) -> Int64 {
        var d = e.records[Int(slot)].writeDeadline
        // (A slot out of the access order, written at an unknown time, has no idle deadline.)
        if let idle = e.idle, idle[Int(slot)].prev != _Expiry.absent { d = min(d, idle[Int(slot)].deadline) }
        return d
    }

    @Test(
        "fast and general paths agree; sweep finds exactly the expired live slots",
        arguments: [
            (ttl: Int64(1_000), tti: _Expiry.never, seed: UInt64(1), startStamp: UInt32(0)),
            (ttl: Int64(1_000), tti: _Expiry.never, seed: UInt64(2), startStamp: UInt32.max - 50),
            (ttl: Int64(1_000), tti: Int64(700), seed: UInt64(3), startStamp: UInt32(0)),
            (ttl: _Expiry.never, tti: _Expiry.never, seed: UInt64(4), startStamp: UInt32(0)),
            (ttl: Int64.max - 5, tti: _Expiry.never, seed: UInt64(5), startStamp: UInt32(0)),
            (ttl: Int64(3), tti: _Expiry.never, seed: UInt64(6), startStamp: UInt32.max - 2),
        ]
    )
    func differential(ttl: Int64, tti: Int64, seed: UInt64, startStamp: UInt32) {
        var times = _ExpiryTimes()
        times.timeToLive = ttl
        times.timeToIdle = tti
        let slots = 40
        let fast = UnsafeMutablePointer<_Expiry>.allocate(capacity: 1)
        let slow = UnsafeMutablePointer<_Expiry>.allocate(capacity: 1)
        fast.initialize(to: _Expiry(times, capacity: 0))
        slow.initialize(to: _Expiry(times, capacity: 0))
        fast.pointee.reserve(capacity: slots, used: 0)
        slow.pointee.reserve(capacity: slots, used: 0)
        fast.pointee.lastStamp = startStamp
        slow.pointee.lastStamp = startStamp
        defer {
            fast.pointee.deallocate()
            slow.pointee.deallocate()
            fast.deallocate()
            slow.deallocate()
        }
        var random = SeededGenerator(seed: seed)
        var live = Set<Int32>()
        var clock: Int64 = 0
        var fastTaken = 0
        for step in 0..<20_000 {
            let op = Int.random(in: 0..<100, using: &random)
            // A time: usually the clock, sometimes behind it (a late arrival), sometimes unknown,
            // sometimes near Int64.max (overflow).
            var now = clock
            let t = Int.random(in: 0..<100, using: &random)
            if t < 5 {
                now = -1
            } else if t < 15 {
                now = max(0, clock - Int64.random(in: 0...50, using: &random))
            } else if t < 17 && seed == 5 {
                now = Int64.max - Int64.random(in: 0...10, using: &random)
            }
            if op < 55 {
                // Write: a live slot (rewrite) or the lowest free slot (immediate reuse).
                let slot: Int32
                if !live.isEmpty && Bool.random(using: &random) {
                    slot = live.randomElement(using: &random)!
                } else if let free = (0..<Int32(slots)).first(where: { !live.contains($0) }) {
                    slot = free
                } else {
                    continue
                }
                let perEntry: Int64? =
                    Int.random(in: 0..<10, using: &random) == 0
                    ? Int64.random(in: 1...2_000, using: &random) : nil
                let e = fast.pointee
                if perEntry == nil && now >= e.latest && e.heapCount == 0 && e.idle == nil && e.writtenAt == nil
                    && e.queueCount < e.queueCapacity && !now.addingReportingOverflow(e.timeToLive).overflow
                    && now + e.timeToLive != _Expiry.never
                {
                    fastTaken += 1
                }
                fast.pointee.didWrite(slot, now: now, timeToLive: perEntry)
                slow.pointee.didWriteInGeneral(slot, now: now, timeToLive: perEntry)
                live.insert(slot)
            } else if op < 70 {
                guard let slot = live.randomElement(using: &random) else { continue }
                fast.pointee.didRemove(slot)
                slow.pointee.didRemove(slot)
                live.remove(slot)
            } else if op < 80 {
                if let slot = live.randomElement(using: &random) {
                    fast.pointee.didRead(slot, now: now)
                    slow.pointee.didRead(slot, now: now)
                }
            } else {
                clock += Int64.random(in: 0...40, using: &random)
                let now = clock
                let expiredNow = Set(live.filter { Self.deadline(fast.pointee, $0) <= now })
                for e in [fast, slow] {
                    let expected = Set(live.filter { Self.deadline(e.pointee, $0) <= now })
                    var got = Set<Int32>()
                    if e.pointee.mayHaveExpired(now: now) {
                        while true {
                            let slot = e.pointee.nextExpired(now: now)
                            if slot == -1 { break }
                            #expect(live.contains(slot), "step \(step): swept slot \(slot) is not live")
                            #expect(got.insert(slot).inserted, "step \(step): slot \(slot) swept twice")
                            e.pointee.didRemove(slot)
                        }
                    }
                    #expect(got == expected, "step \(step): swept \(got.sorted()), expected \(expected.sorted())")
                }
                live.subtract(expiredNow)
            }
            fast.pointee._checkInvariants { live.contains($0) }
            slow.pointee._checkInvariants { live.contains($0) }
            // The fast one pops the head on forget as the slow one does, so the states must match.
            let a = Self.snapshot(fast.pointee, slots: slots)
            let b = Self.snapshot(slow.pointee, slots: slots)
            if a != b {
                Issue.record("step \(step): states differ\nfast \(a)\nslow \(b)")
                return
            }
        }
        print("seed \(seed): fast path taken \(fastTaken) times")
    }
}
