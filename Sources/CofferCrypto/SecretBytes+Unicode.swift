import Foundation

extension SecretBytes {
    /// Whether every byte is ASCII (such text is already NFC).
    var isASCII: Bool { withBytes { b in b.allSatisfy { $0 < 0x80 } } }

    /// The bytes as UTF-8 text in Unicode Normalization Form C, in new
    /// guarded memory; nil when they are not valid UTF-8. ASCII (the usual
    /// case) is returned as it is, without leaving guarded memory. Other
    /// text passes through a Swift `String` for the normalization: that
    /// copy cannot be wiped (docs/threat-model.md); the byte arrays used
    /// on the way are zeroed.
    public func nfcNormalizedUTF8() -> SecretBytes? {
        if isASCII { return self }
        var raw = withBytes { Array($0) }
        defer { for i in raw.indices { raw[i] = 0 } }
        guard let text = String(validating: raw, as: UTF8.self) else { return nil }
        var nfc = Array(text.precomposedStringWithCanonicalMapping.utf8)
        defer { for i in nfc.indices { nfc[i] = 0 } }
        return SecretBytes(copying: nfc)
    }
}
