import Foundation
import LiveBusClock
import Testing

@testable import LiveBusSimulator

/// The content state's canonical JSON and Apple's 4 KB limit (live-activities.md §1.6).
struct ContentStateTests {
    static let sample = ContentState(
        status: .delivering,
        etaTarget: at(600_000),
        progress: 0.75,
        riderPosition: Coordinate(latitude: 37.5, longitude: 127.25),
        lastConfirmed: at(5_000)
    )

    /// The canonical encoding: sorted keys, instants as `…Ms` integers on the server clock, the status's summary.
    @Test func canonicalJSON() {
        let json = String(decoding: Self.sample.encodedJSON(), as: UTF8.self)
        #expect(
            json
                == #"{"etaTargetMs":1767226200000,"lastConfirmedMs":1767225605000,"progress":0.75,"#
                + #""riderPosition":{"latitude":37.5,"longitude":127.25},"status":"delivering","#
                + #""summary":{"detailEn":"Order is out for delivery","detailKo":"라이더가 배달 중이에요","en":"On the way","ko":"배달 중"}}"#
        )
        #expect(Self.sample.encodedSize == Self.sample.encodedJSON().count)
    }

    /// A content state of 4096 bytes or less passes; a larger one is rejected with `contentStateTooLarge`.
    @Test func fourKilobyteLimit() throws {
        try Self.sample.validateSize()
        var big = Self.sample
        big.summary.detailEn = String(repeating: "x", count: 4096)
        #expect(big.encodedSize > 4096)
        #expect {
            try big.validateSize()
        } throws: { error in
            (error as? SimulatorError)?.code == .contentStateTooLarge
        }
        // Exactly at the limit is allowed.
        var edge = Self.sample
        edge.summary.detailEn = ""
        edge.summary.detailEn = String(repeating: "y", count: 4096 - edge.encodedSize)
        #expect(edge.encodedSize == 4096)
        try edge.validateSize()
    }

    /// The worst-case size bounds every real content state of the same summary.
    @Test func worstCaseBoundsRealStates() throws {
        let (_, events) = playAll(try Scenario.builtIn(named: "demo-120s"))
        for e in events {
            #expect(e.contentState.encodedSize <= ContentState.worstCaseSize(summary: e.contentState.summary))
        }
    }

    /// Events round-trip through their JSON form.
    @Test func eventRoundTrip() throws {
        let (_, events) = playAll(try Scenario.builtIn(named: "demo-120s"))
        let data = try JSONEncoder().encode(events)
        #expect(try JSONDecoder().decode([OrderEvent].self, from: data) == events)
    }

    /// The existing initializer still works and defaults the summary to the status's wording.
    @Test func defaultSummary() {
        #expect(
            Self.sample.summary
                == CustomerSummary(
                    ko: "배달 중",
                    en: "On the way",
                    detailKo: "라이더가 배달 중이에요",
                    detailEn: "Order is out for delivery"
                )
        )
        #expect(OrderStatus.cooking.summaryKorean == "조리 중")
        #expect(OrderStatus.awaitingPickup.summaryKorean == "픽업 대기")
        #expect(OrderStatus.pickedUp.summaryKorean == "픽업 완료")
    }
}
