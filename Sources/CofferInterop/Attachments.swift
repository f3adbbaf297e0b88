import CofferKit
import Foundation

/// Helpers for attachments (binary fields, `Field.isFile`) read from or
/// written to other tools' files (docs/import-export.md#attachments).
enum Attachments {
    /// A size for messages: `512 bytes`, `3.2 KiB`, `20.0 MiB`.
    static func size(_ n: Int) -> String {
        if n < 1024 { return "\(n) byte\(n == 1 ? "" : "s")" }
        if n < 1024 * 1024 { return String(format: "%.1f KiB", Double(n) / 1024) }
        return String(format: "%.1f MiB", Double(n) / (1024 * 1024))
    }
}

extension InterchangeEntry {
    /// Adds an attachment (secret, binary) named after its file; a name
    /// already used gets ` (2)`, ` (3)`… before the extension
    /// (`scan.pdf`, `scan (2).pdf`). Returns the name used.
    @discardableResult
    mutating func appendAttachment(_ fileName: String, _ bytes: [UInt8]) -> String {
        let base = InterchangeEntry.cleanFieldName(fileName)
        let ext = (base as NSString).pathExtension
        let stem = ext.isEmpty ? base : String(base.dropLast(ext.count + 1))
        var candidate = base
        var n = 2
        while fields.contains(where: { $0.name == candidate }) {
            candidate = ext.isEmpty || stem.isEmpty ? "\(base) (\(n))" : "\(stem) (\(n)).\(ext)"
            n += 1
        }
        fields.append(Field(name: candidate, bytes: bytes, isSecret: true, isFile: true))
        return candidate
    }
}
