// The types CofferKit's public API hands out or takes that are defined in
// the lower layers, re-exported one by one so that `import CofferKit` is
// all an application needs. Nothing else of those modules is re-exported:
// in particular CofferCrypto's AEAD, secretstream and `package` entry
// points with caller-chosen nonces stay invisible to applications.

@_exported import struct CofferCrypto.KDFParameters
// Member identities of shared vaults (docs/sharing.md).
@_exported import enum CofferCrypto.MemberKeyError
@_exported import struct CofferCrypto.MemberPublicKey
@_exported import class CofferCrypto.MemberSecretKey
@_exported import enum CofferCrypto.SSHKeyError
@_exported import enum CofferCrypto.SSHKeyType
// SSH keys (docs/ssh.md): the key, its algorithm, the sign flags.
@_exported import class CofferCrypto.SSHPrivateKey
@_exported import enum CofferCrypto.SSHPublicKey
@_exported import enum CofferCrypto.SSHSignatureFlags
// Passphrases and keys in guarded memory; Argon2id cost parameters.
@_exported import class CofferCrypto.SecretBytes
@_exported import struct CofferSync.BundleHeader
@_exported import struct CofferSync.Dot
// Identifiers, sync policy and version vectors that items, reports and
// conflicts carry.
@_exported import struct CofferSync.Identifier16
@_exported import typealias CofferSync.ItemID
@_exported import struct CofferSync.KeyEpoch
@_exported import typealias CofferSync.ReplicaID
@_exported import enum CofferSync.SyncPolicy
@_exported import typealias CofferSync.VaultID
@_exported import struct CofferSync.VersionVector
