import CofferCrypto
import CofferKit

/// How strong a new vault passphrase must be (`init`, `passwd`), by the
/// audit's estimator (docs/audit.md): below ``minimumBits`` it is refused
/// unless `--force`, below ``PasswordStrength/weakThreshold`` it is taken
/// with a warning. The passphrase itself is never printed; the estimate's
/// reason names only its patterns. docs/user-guide.md, "Creating a vault".
enum PassphrasePolicy {
    /// About a thousand guesses: a passphrase this easy falls to any
    /// attacker who has the vault file, whatever the KDF costs.
    static let minimumBits = 10.0

    static func check(_ passphrase: SecretBytes, force: Bool) throws(CofferError) {
        // The estimator works on text: a short-lived copy of the passphrase
        // (a Swift String cannot be wiped; docs/threat-model.md).
        let estimate = PasswordStrength.estimate(String(decoding: passphrase.revealedBytes(), as: UTF8.self))
        let bits = Int(estimate.bits.rounded(.down))
        if estimate.bits < minimumBits && !force {
            throw CofferError(
                .usage, "the passphrase is far too weak (about \(bits) bits: \(estimate.reason)); nothing was created or changed",
                hint: "choose several random words (`coffer generate --words 6`), or pass --force to accept it anyway")
        }
        if estimate.bits < PasswordStrength.weakThreshold {
            Output.warn(
                "the passphrase is weak (about \(bits) bits, below \(Int(PasswordStrength.weakThreshold)): \(estimate.reason)); anyone with the vault file can guess it more easily — consider `coffer passwd` with several random words"
            )
        }
    }
}
