/// The version of the fault file format (`Protocol/FAULTS.md`).
public let faultFormatVersion = 1
