import Testing
@testable import LiveBusWire

@Test func placeholder() {}
