import ArgumentParser
import CofferKit
import Foundation

/// `coffer identity`: member identities of shared vaults (docs/sharing.md).
struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Make or show the member identity used to share vaults.",
        discussion: """
            A member identity is a key pair for receiving a shared vault's key (X25519) and one for \
            signing what you write (Ed25519). Its public half is one line, coffer1…, that you give \
            to whoever adds you with `coffer members add`. See `coffer help sharing`.
            """,
        subcommands: [IdentityNew.self, IdentityShow.self])
}

struct IdentityNew: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Make a member identity and print its public half (coffer1…).",
        discussion: """
            Without --out the secret half is kept in the vault, as the local-only item \
            .coffer/identity: it never enters a bundle. With --out FILE it is written to a new \
            file of mode 0600 instead and no vault is needed (for CI: store the file as a CI \
            secret and give it to `coffer clone --identity FILE`). The public identity is printed \
            on stdout:
              coffer identity new --name alice
              coffer identity new --name ci-deploy --out ci.identity
            """)

    @OptionGroup var options: VaultOptions

    @Option(help: "A name for the identity (default: your login name).")
    var name: String?

    @Option(help: "Write the identity to this new file (mode 0600) instead of the vault.")
    var out: String?

    func run() throws {
        let chosen = name ?? MemberIdentity.defaultName
        if let out {
            let identity = try MemberIdentity.generate(name: chosen)
            try MemberIdentityFile.write(identity, to: out)
            Output.note("wrote the identity '\(identity.name)' to \(out) (mode 0600; keep it secret: it opens every vault shared with it)")
            Output.out(identity.publicKey.text)
            return
        }
        try MemberIdentity.checkName(chosen)
        let vault = try options.unlockForWriting()
        let identity = try vault.createMemberIdentity(name: chosen)
        Output.note("made the identity '\(identity.name)'; its secret half is in this vault (.coffer/identity, local-only: never in a bundle)")
        Output.out(identity.publicKey.text)
    }
}

struct IdentityShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print the public identity (coffer1…) of this vault or of an identity file.",
        discussion: "JSON: Schemas/identity.schema.json.")

    @OptionGroup(title: "Vault options (--identity FILE: read the identity from this file instead of the vault)") var options: VaultOptions

    @Flag(help: "Print JSON (Schemas/identity.schema.json).")
    var json = false

    func run() throws {
        let found: MemberIdentity
        if let identity = options.identity {
            found = try MemberIdentityFile.read(path: identity)
        } else {
            let vault = try options.unlock()
            guard let held = try vault.memberIdentity() else {
                throw CofferError(.itemNotFound, "this vault holds no member identity", hint: "make one with `coffer identity new`")
            }
            found = held
        }
        if json {
            try Output.json(IdentityJSON(name: found.name, publicIdentity: found.publicKey.text))
        } else {
            Output.out(found.publicKey.text)
        }
    }
}

struct IdentityJSON: Encodable {
    var name: String
    var publicIdentity: String
}
