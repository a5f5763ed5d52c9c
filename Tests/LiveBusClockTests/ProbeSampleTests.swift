import Foundation
import Testing

@testable import LiveBusClock

struct ProbeSampleTests {
    /// RFC 5905 §8: θ = ((t2 − t1) + (t3 − t4)) / 2 and δ = (t4 − t1) − (t3 − t2), in ms.
    @Test func onWireOffsetAndDelay() {
        let sample = ProbeSample(
            serverSend: ServerInstant(millisecondsSinceEpoch: 1_000),
            clientReceive: ClientInstant(millisecondsSinceEpoch: 6_010),
            clientSend: ClientInstant(millisecondsSinceEpoch: 6_012),
            serverReceive: ServerInstant(millisecondsSinceEpoch: 1_022)
        )
        #expect(sample.offsetMilliseconds == 5_000)
        #expect(sample.roundTripMilliseconds == 20)
        #expect(sample.serverMidpointMilliseconds == 1_011)
    }

    /// RFC 5905 §8: with unequal one-way delays θ is off by half their difference (here (30 − 2) / 2 = 14 ms).
    @Test func asymmetricDelayBiasesTheOffsetByHalfTheDifference() {
        let sample = ProbeSample(
            serverSend: ServerInstant(millisecondsSinceEpoch: 1_000),
            clientReceive: ClientInstant(millisecondsSinceEpoch: 6_030),
            clientSend: ClientInstant(millisecondsSinceEpoch: 6_031),
            serverReceive: ServerInstant(millisecondsSinceEpoch: 1_033)
        )
        #expect(sample.offsetMilliseconds == 5_014)
        #expect(sample.roundTripMilliseconds == 32)
    }

    /// DESIGN.md "Clocks and units": instants encode as one integer of ms and decode back to the same clock's type.
    @Test func instantsAndEstimatesRoundTripThroughCodable() throws {
        let estimate = ClockEstimate(
            offsetMilliseconds: -3_600_000.5,
            driftPPM: 200,
            errorBoundMilliseconds: 7.25,
            driftErrorBoundPPM: 12,
            roundTripMilliseconds: 11,
            reference: ServerInstant(millisecondsSinceEpoch: 1_764_460_800_000),
            sampleCount: 9
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(estimate), as: UTF8.self)
        #expect(
            json == "{\"driftErrorBoundPPM\":12,\"driftPPM\":200,\"errorBoundMilliseconds\":7.25,"
                + "\"offsetMilliseconds\":-3600000.5,\"reference\":1764460800000,\"roundTripMilliseconds\":11,"
                + "\"sampleCount\":9}"
        )
        #expect(try JSONDecoder().decode(ClockEstimate.self, from: Data(json.utf8)) == estimate)
        let converted = ConvertedInstant(
            client: ClientInstant(millisecondsSinceEpoch: 5),
            server: ServerInstant(millisecondsSinceEpoch: 3),
            uncertaintyMilliseconds: 2
        )
        let convertedJSON = try encoder.encode(converted)
        #expect(
            String(decoding: convertedJSON, as: UTF8.self)
                == "{\"client\":5,\"server\":3,\"uncertaintyMilliseconds\":2}"
        )
        #expect(try JSONDecoder().decode(ConvertedInstant.self, from: convertedJSON) == converted)
    }
}
