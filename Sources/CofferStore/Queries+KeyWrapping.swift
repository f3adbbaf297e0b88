import CofferSync
import Foundation
import GRDB

extension IntegrityTerm {
    /// The vault-MAC term of the `keyWrapping` row (format 3):
    /// "W" || the stored version bytes. No row, no term.
    public static func keyWrapping(_ version: KeyWrappingVersion) -> [UInt8] {
        var w = ByteWriter(capacity: 32 + 24 * version.vector.count)
        w.u8(UInt8(ascii: "W"))
        w.bytes(version.encoded)
        return w.data
    }
}

extension Queries {
    /// The version of the passphrase wrapping the header holds
    /// (``KeyWrappingVersion/initial`` when the row is absent).
    public static func keyWrapping(_ db: Database) throws -> KeyWrappingVersion {
        guard try tableExists(db, "keyWrapping"),
            let row = try Row.fetchOne(db, sql: "SELECT version FROM keyWrapping WHERE singleton = 1")
        else { return .initial }
        let bytes = try row.blob(at: 0, name: "keyWrapping.version")
        do {
            return try KeyWrappingVersion(decoding: Array(bytes))
        } catch {
            throw StoreError.damaged("keyWrapping.version is malformed (\(error))")
        }
    }

    /// Replaces the wrapping's version, keeping the vault MAC in step.
    public static func setKeyWrapping(_ db: Database, _ version: KeyWrappingVersion, mac: VaultMAC) throws {
        let old = try keyWrapping(db)
        if !old.isInitial { mac.toggle(IntegrityTerm.keyWrapping(old)) }
        if version.isInitial {
            try db.execute(sql: "DELETE FROM keyWrapping")
        } else {
            mac.toggle(IntegrityTerm.keyWrapping(version))
            try db.execute(
                sql: "INSERT OR REPLACE INTO keyWrapping (singleton, version) VALUES (1, ?)",
                arguments: [Data(version.encoded)])
        }
    }
}
