import Testing
@testable import LiveBusSimulator

@Test func placeholder() {}
