import ArgumentParser
import CofferKit

extension ItemType: ExpressibleByArgument {}

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a credential.",
        discussion: """
            The type's primary secret (key, password, notes) is read from standard input when it \
            is not a terminal, or asked for without echo, unless given with --field or --secret. \
            Examples:
              printf %s "$KEY" | coffer add work/openai --type api-key --source openai
              coffer add github --type login --field username=me --secret password
              coffer add github --type login --field username=me --generate --totp-uri -
            --generate stores a generated main secret without printing it (see `coffer generate` \
            for --length, --chars, --words); --totp-uri - reads an otpauth:// URI (or base32 \
            secret) for `coffer otp` from stdin or a prompt.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, a path such as work/openai.")
    var name: String

    @Option(help: "Credential type: api-key, email, api-key-with-email, login, note, custom, ssh-key.")
    var type: ItemType = .apiKey

    @Option(
        name: .customLong("field"), help: ArgumentHelp("Set a field (repeatable). Secret values here are visible to other processes.", valueName: "key=value"))
    var fields: [String] = []

    @Option(name: .customLong("secret"), help: ArgumentHelp("Read this field's value from stdin or a no-echo prompt (repeatable).", valueName: "key"))
    var secrets: [String] = []

    @Option(name: .customLong("tag"), help: "Add a tag (repeatable).")
    var tags: [String] = []

    @Option(help: ArgumentHelp("Source id, e.g. openai.", valueName: "id"))
    var source: String?

    @Option(help: "URL (sets the url field).")
    var url: String?

    @Option(help: ArgumentHelp("Expiry: YYYY-MM-DD, or a span from today such as 30d, 6w, 3m, 1y.", valueName: "date"))
    var expires: String?

    @Flag(help: "Keep this item on this machine: it never enters a bundle.")
    var localOnly = false

    @Option(help: ArgumentHelp("Check the value against this requirements manifest (default: the registered ones).", valueName: "file"))
    var requirements: String?

    @Flag(help: "Store the value even if it fails its source's format rule.")
    var force = false

    @Flag(help: "Generate the type's main secret (password, key) instead of reading it; it is never printed.")
    var generate = false

    @Option(help: ArgumentHelp("Generate this field's value (repeatable).", valueName: "field"))
    var generateField: [String] = []

    @OptionGroup(title: "Generation (with --generate)") var generation: GenerateOptions

    @Option(help: ArgumentHelp("The TOTP secret for `coffer otp`: '-' reads an otpauth:// URI or base32 secret from stdin or a prompt.", valueName: "-"))
    var totpUri: String?

    @Option(
        help: ArgumentHelp("--type ssh-key: the private key file to import (OpenSSH, or PEM for ECDSA and RSA).", valueName: "path"),
        completion: .file())
    var fromFile: String?

    @Option(help: ArgumentHelp("--type ssh-key: read an encrypted key's passphrase from this file descriptor.", valueName: "fd"))
    var keyPassphraseFd: Int32?

    /// The parsed command line as plain values: what AddFastPath builds
    /// without argument-parser for the forms it handles (FastPathDriftTests
    /// compares the two).
    var request: Request {
        Request(
            name: name, type: type, fields: fields, secrets: secrets, tags: tags, source: source, url: url,
            expires: expires, localOnly: localOnly, requirements: requirements, force: force, generate: generate,
            generateField: generateField, generation: generation.spec, totpUri: totpUri, fromFile: fromFile,
            keyPassphraseFd: keyPassphraseFd)
    }

    func run() throws {
        try Self.execute(request, passphraseOnStdin: options.passphraseFd == 0) { () throws(CofferError) in
            try options.unlockForWriting()
        }
    }

    /// What `coffer add` was asked to do, as plain values: argument-parser
    /// fills it in ``run()``, ``AddFastPath`` without argument-parser.
    struct Request: Equatable {
        var name: String
        var type: ItemType = .apiKey
        var fields: [String] = []
        var secrets: [String] = []
        var tags: [String] = []
        var source: String?
        var url: String?
        var expires: String?
        var localOnly = false
        var requirements: String?
        var force = false
        var generate = false
        var generateField: [String] = []
        var generation = GenerationSpec()
        var totpUri: String?
        var fromFile: String?
        var keyPassphraseFd: Int32?
    }

    /// The command itself, shared by both parsers. `passphraseOnStdin`:
    /// the passphrase is read from descriptor 0 (`--passphrase-fd 0`), so a
    /// value cannot be; `unlockForWriting` opens and unlocks the vault.
    static func execute(_ r: Request, passphraseOnStdin: Bool, unlockForWriting: () throws(CofferError) -> Vault) throws(CofferError) {
        let name = r.name
        let type = r.type
        if type == .sshKey {
            try SSHKeyImport.add(r, passphraseOnStdin: passphraseOnStdin, unlockForWriting: unlockForWriting)
            return
        }
        if r.fromFile != nil || r.keyPassphraseFd != nil {
            throw CofferError(.usage, "--from-file and --key-passphrase-fd are for --type ssh-key", hint: "add --type ssh-key to import an SSH key")
        }
        let source = r.source
        var draft = ItemDraft(name: name, type: type, tags: r.tags, source: source, policy: r.localOnly ? .localOnly : .sync)
        if let expires = r.expires {
            guard let day = Day.parseExpiry(expires) else {
                throw CofferError(.usage, "invalid --expires '\(expires)'", hint: "use YYYY-MM-DD or a span such as 30d, 6w, 3m, 1y")
            }
            if day < Day.today { Output.warn("--expires \(day) is in the past: the item is stored as already expired") }
            draft.expires = day
        }
        // Validate cheap things before asking for any secret.
        _ = try Vault.normalizeName(name)
        var fieldList = try ItemInput.parseAssignments(r.fields, type: type)
        if let url = r.url { fieldList.append(Field(name: "url", value: url, isSecret: false)) }
        if r.generation.isUsed && !r.generate && r.generateField.isEmpty {
            throw CofferError(.usage, "--length, --chars, --words, --separator, --no-symbols and --no-ambiguous need --generate or --generate-field")
        }
        _ = try r.generation.recipe()
        if let totpUri = r.totpUri, totpUri != "-" {
            _ = try TOTP.parse(totpUri)
            Output.warn("the TOTP secret was given on the command line, where other processes and shell history can see it; prefer --totp-uri - and pipe it in")
            fieldList.append(Field(name: "totp", value: totpUri, isSecret: true))
        }
        var generated = r.generateField
        if r.generate {
            guard let main = type.primaryFieldName else {
                throw CofferError(.usage, "a custom item has no main secret to generate", hint: "name the field with --generate-field FIELD")
            }
            generated.insert(main, at: 0)
        }
        let manifest = try CredentialGate.loadManifest(r.requirements)
        let vault = try unlockForWriting()
        if try vault.contains(name) {
            throw CofferError(
                .duplicateName, "an item named '\(try Vault.normalizeName(name))' already exists", hint: "choose another name, or change it with `coffer edit`")
        }
        var stdinUsed = passphraseOnStdin
        for key in generated {
            fieldList.append(Field(name: key, value: try r.generation.generate(), isSecret: true))
        }
        if r.totpUri == "-" {
            fieldList.append(try ItemInput.readTOTP(stdinUsed: &stdinUsed))
        }
        for key in r.secrets {
            fieldList.append(Field(name: key, value: try ItemInput.readSecret(named: key, stdinUsed: &stdinUsed), isSecret: true))
        }
        if let primary = type.primaryFieldName, type.defaultSecrecy(of: primary),
            !fieldList.contains(where: { $0.name == primary })
        {
            fieldList.append(Field(name: primary, value: try ItemInput.readSecret(named: primary, stdinUsed: &stdinUsed), isSecret: true))
        }
        try CredentialGate.run(vault: vault, fields: fieldList, type: type, source: source, manifest: manifest, force: r.force)
        let item = try vault.add(draft.with(fields: fieldList))
        Output.note("added \(item.name) (\(item.type.rawValue)\(item.policy == .localOnly ? ", local-only" : ""))")
    }
}

extension ItemDraft {
    func with(fields: [Field]) -> ItemDraft {
        var d = self
        d.fields = fields
        return d
    }
}
