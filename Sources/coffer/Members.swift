import ArgumentParser
import CofferKit
import Foundation

/// `coffer members`: who shares this vault (docs/sharing.md, "Members").
struct MembersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members",
        abstract: "Add, list and remove the members who share this vault.",
        discussion: """
            A member is a name and a public identity (coffer1…, from `coffer identity new`). The \
            membership is stored in the vault and syncs like any item. Removing a member rotates \
            the master key. See `coffer help sharing`.
            """,
        subcommands: [MembersAdd.self, MembersList.self, MembersRemove.self])
}

struct MembersAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a member (or change a member's identity or role).",
        discussion: """
              coffer members add bob coffer1…
              coffer members add ci coffer1… --read-only
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "The member's name (letters, digits, '.', '_', '-', '@').")
    var name: String

    @Argument(help: "The member's public identity, coffer1….")
    var publicIdentity: String

    @Flag(help: "A member who reads only (a CI job).")
    var readOnly = false

    func run() throws {
        try MemberIdentity.checkName(name)
        let key = try MemberIdentity.publicKey(from: publicIdentity)
        let vault = try options.unlockForWriting()
        let (member, replaced) = try vault.addMember(name: name, publicKey: key, role: readOnly ? .readOnly : .readWrite)
        Output.note("\(replaced ? "changed" : "added") the member '\(member.name)' (\(member.role.rawValue))")
    }
}

struct MembersList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the members.",
        discussion: "One line per member: name, role, public identity. JSON: Schemas/members.schema.json.")

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON (Schemas/members.schema.json).")
    var json = false

    func run() throws {
        let vault = try options.unlock()
        let m = try vault.membership()
        if json {
            try Output.json(
                MembersJSON(
                    members: m.members.map {
                        MembersJSON.Member(
                            name: $0.name, role: $0.role.rawValue, publicIdentity: $0.publicKey.text,
                            signKey: $0.publicKey.signKey.map { String(format: "%02x", $0) }.joined(), conflict: $0.hasConflict)
                    },
                    unreadable: m.unreadable.map { MembersJSON.Unreadable(name: $0.name, problem: $0.problem) }))
            return
        }
        for member in m.members {
            Output.out("\(member.name)\t\(member.role.rawValue)\t\(member.publicKey.text)\(member.hasConflict ? "\t(conflict)" : "")")
        }
        for u in m.unreadable { Output.warn("the member entry '\(u.name)' cannot be used: \(u.problem)") }
    }
}

struct MembersRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Remove a member and rotate the master key.",
        discussion: """
            Removes the member's entry and rotates the master key (as `coffer rekey`, keeping the \
            passphrase, which is asked for: a session is not enough). The removed member keeps \
            everything they already read; they cannot read what is written under the new key.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "The member's name.")
    var name: String

    func run() throws {
        try MemberIdentity.checkName(name)
        let file = try options.openFile()
        let passphrase = try options.passphrase(prompt: "Passphrase: ")
        let vault = try file.unlock(passphrase: passphrase)
        if try vault.membership().members.first(where: { $0.name == name }) == nil, !(try vault.membership().unreadable.contains { $0.name == name }) {
            throw CofferError(.itemNotFound, "no member named '\(name)'", hint: "list the members with `coffer members ls`")
        }
        if let change = try vault.claimReplica() { Output.note(change.message) }
        let removal = try file.removeMember(name, from: vault, passphrase: passphrase)
        Output.note(
            "removed the member '\(removal.name)' and rotated the master key (key epoch \(removal.rekey.previous.number) → \(removal.rekey.epoch.number))")
        Output.note(
            "'\(removal.name)' keeps everything they already read (copies of secrets, old bundles); change those secrets at their source if that matters. Nothing written from now on can be read with their identity; if they also knew the vault's passphrase, change it with `coffer passwd`."
        )
    }
}

struct MembersJSON: Encodable {
    struct Member: Encodable {
        var name: String
        var role: String
        var publicIdentity: String
        /// The Ed25519 half in hex: what `coffer inspect` shows as a
        /// signed bundle's publisher.
        var signKey: String
        var conflict: Bool
    }
    struct Unreadable: Encodable {
        var name: String
        var problem: String
    }
    var members: [Member]
    var unreadable: [Unreadable]
}
