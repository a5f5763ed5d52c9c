import LiveBusScenario
import Testing

/// The scenario format version is 1 (Protocol/E2E.md).
@Test func formatVersionIsOne() {
    #expect(e2eScenarioFormatVersion == 1)
}
