import LiveBusFaults
import Testing

/// The fault format version is 1.
@Test func faultFormatIsOne() { #expect(faultFormatVersion == 1) }
