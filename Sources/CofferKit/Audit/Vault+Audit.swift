import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's audit operations: each is ``Auditing``'s.
extension Vault {
    /// Audits the vault's secrets (every secret field except notes) for
    /// the issues of ``AuditIssue``. Values are decrypted in memory only:
    /// reuse is found by comparing keyed BLAKE2b hashes under a random key
    /// made for this call and dropped after it, and no value, hash or part
    /// of one is in the report.
    public func audit(_ options: AuditOptions = AuditOptions()) throws(CofferError) -> AuditReport {
        try auditing.audit(options)
    }
}
