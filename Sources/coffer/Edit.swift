import ArgumentParser
import CofferKit
import CofferSync

extension SyncPolicy: ExpressibleByArgument {}

struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Change a credential: set or unset fields, rename, tags, source, expiry, policy.",
        discussion: """
            All changes are one write. Examples:
              coffer edit work/openai --secret key     # new key from stdin or a prompt
              coffer edit work/openai --rename personal/openai --tag ai
              coffer edit github --unset url --expires 90d
              coffer edit work/openai --policy local-only   # stop syncing it
              coffer edit work/openai --env-var key=OPENAI_API_KEY   # for `coffer env`
              coffer edit corp/proxy --allow-env-var HTTPS_PROXY     # a guarded name, on purpose
              coffer edit github --generate --words 6          # new password, never printed
              coffer edit github --totp                        # otpauth:// URI from stdin
              coffer edit github                               # open it in $VISUAL/$EDITOR
            With no change options the item opens in $VISUAL or $EDITOR as text: line 1 the main \
            secret, then `field: value` lines, then an empty line and notes (`coffer help guide`). \
            The file is 0600 in a 0700 folder under $XDG_RUNTIME_DIR (--unsafe-tmp allows a shared \
            temporary folder) and is wiped afterwards.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Option(help: "New name.")
    var rename: String?

    @Option(name: .customLong("field"), help: ArgumentHelp("Set a field (repeatable).", valueName: "key=value"))
    var fields: [String] = []

    @Option(name: .customLong("secret"), help: ArgumentHelp("Set a field from stdin or a no-echo prompt (repeatable).", valueName: "key"))
    var secrets: [String] = []

    @Option(name: .customLong("unset"), help: ArgumentHelp("Remove a field (repeatable).", valueName: "key"))
    var unset: [String] = []

    @Option(name: .customLong("tag"), help: "Add a tag (repeatable).")
    var tags: [String] = []

    @Option(name: .customLong("untag"), help: "Remove a tag (repeatable).")
    var untags: [String] = []

    @Option(help: ArgumentHelp("Set the source id.", valueName: "id"))
    var source: String?

    @Flag(help: "Remove the source id.")
    var noSource = false

    @Option(help: ArgumentHelp("Set the expiry: YYYY-MM-DD or 30d, 6w, 3m, 1y.", valueName: "date"))
    var expires: String?

    @Flag(help: "Remove the expiry.")
    var noExpires = false

    @Option(help: "Change the type.")
    var type: ItemType?

    @Option(help: "Sync policy: sync or local-only.")
    var policy: SyncPolicy?

    @Option(help: "URL (sets the url field).")
    var url: String?

    @Option(
        name: .customLong("env-var"),
        help: ArgumentHelp("Name the variable `coffer env` uses for a field; VAR '-' leaves the field out (repeatable).", valueName: "field=VAR"))
    var envVars: [String] = []

    @Option(name: .customLong("no-env-var"), help: ArgumentHelp("Go back to the default variable name for a field (repeatable).", valueName: "field"))
    var noEnvVars: [String] = []

    @Option(
        name: .customLong("allow-env-var"),
        help: ArgumentHelp(
            "Let `coffer env` set this guarded variable (GIT_PAGER, HTTPS_PROXY, LD_*…; `coffer help references`) from this item (repeatable; stored in the item, it syncs).",
            valueName: "VAR"))
    var allowEnvVars: [String] = []

    @Option(name: .customLong("no-allow-env-var"), help: ArgumentHelp("Take back an --allow-env-var (repeatable).", valueName: "VAR"))
    var noAllowEnvVars: [String] = []

    @Option(help: ArgumentHelp("Check new values against this requirements manifest (default: the registered ones).", valueName: "file"))
    var requirements: String?

    @Flag(help: "Store values even if they fail their source's format rule.")
    var force = false

    @Flag(help: "Set the type's main secret (password, key) to a generated one, never printed.")
    var generate = false

    @Option(help: ArgumentHelp("Set this field to a generated secret instead (repeatable).", valueName: "field"))
    var generateField: [String] = []

    @OptionGroup(title: "Generation (with --generate)") var generation: GenerateOptions

    @Flag(help: "Set the totp field from stdin or a no-echo prompt (an otpauth:// URI or base32 secret).")
    var totp = false

    @Flag(help: "With no change options: allow the editor's file in a shared temporary folder when $XDG_RUNTIME_DIR is not usable.")
    var unsafeTmp = false

    /// No change option given: the item opens in the editor.
    var changesNothing: Bool {
        rename == nil && fields.isEmpty && secrets.isEmpty && unset.isEmpty && tags.isEmpty && untags.isEmpty
            && source == nil && !noSource && expires == nil && !noExpires && type == nil && policy == nil && url == nil
            && envVars.isEmpty && noEnvVars.isEmpty && allowEnvVars.isEmpty && noAllowEnvVars.isEmpty && !generate && generateField.isEmpty && !totp
            && !generation.isUsed
    }

    func run() throws {
        if changesNothing {
            try EditInEditor.run(options: options, name: name, unsafeTmp: unsafeTmp, requirements: requirements, force: force)
            return
        }
        if generation.isUsed && !generate && generateField.isEmpty {
            throw CofferError(.usage, "--length, --chars, --words, --separator, --no-symbols and --no-ambiguous need --generate or --generate-field")
        }
        _ = try generation.recipe()
        var envChanges: [(field: String, variable: String?)] = []
        for a in envVars {
            guard let eq = a.firstIndex(of: "="), eq != a.startIndex, EnvNaming.isValidOverride(String(a[a.index(after: eq)...])),
                !a.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw CofferError(
                    .usage, "invalid --env-var '\(a)'",
                    hint: "write FIELD=VAR with VAR made of letters, digits and '_' (not starting with a digit), or FIELD=- to leave the field out")
            }
            envChanges.append((String(a[..<eq]), String(a[a.index(after: eq)...])))
        }
        for f in noEnvVars { envChanges.append((f, nil)) }
        for v in allowEnvVars + noAllowEnvVars where !Dotenv.isValidName(v) {
            let flag = allowEnvVars.contains(v) ? "--allow-env-var" : "--no-allow-env-var"
            throw CofferError(.usage, "invalid \(flag) '\(v)': write a variable name, letters, digits and '_' (not starting with a digit)")
        }
        var edit = ItemEdit()
        edit.rename = rename
        edit.unsetFields = unset
        edit.addTags = tags
        edit.removeTags = untags
        edit.type = type
        edit.policy = policy
        if noSource { edit.source = .some(nil) } else if let source { edit.source = .some(source) }
        if noExpires {
            edit.expires = .some(nil)
        } else if let expires {
            guard let d = Day.parseExpiry(expires) else {
                throw CofferError(.usage, "invalid --expires '\(expires)'", hint: "use YYYY-MM-DD or a span such as 30d, 6w, 3m, 1y")
            }
            if d < Day.today { Output.warn("--expires \(d) is in the past: the item is stored as already expired") }
            edit.expires = .some(d)
        }
        if let rename { _ = try Vault.normalizeName(rename) }
        let manifest = try CredentialGate.loadManifest(requirements)
        let vault = try options.unlockForWriting()
        let current = try vault.item(named: name)
        var set = try ItemInput.parseAssignments(fields, type: type ?? current.type)
        if let url { set.append(Field(name: "url", value: url, isSecret: false)) }
        var stdinUsed = options.passphraseFd == 0
        for key in secrets {
            set.append(Field(name: key, value: try ItemInput.readSecret(named: key, stdinUsed: &stdinUsed), isSecret: true))
        }
        if totp {
            set.append(try ItemInput.readTOTP(stdinUsed: &stdinUsed))
        }
        var generated = generateField
        if generate {
            guard let main = (type ?? current.type).primaryFieldName ?? current.primaryField?.name else {
                throw CofferError(.usage, "'\(current.name)' has no main secret field to generate", hint: "name one with --generate-field FIELD")
            }
            generated.insert(main, at: 0)
        }
        for key in generated {
            set.append(Field(name: key, value: try generation.generate(), isSecret: true))
        }
        // A field keeps its secrecy unless it is re-entered with --secret.
        set = set.map { f in
            var f = f
            if let old = current.field(f.name), old.isSecret { f.isSecret = true }
            return f
        }
        edit.setFields = set
        if !envChanges.isEmpty {
            var env = current.env
            for c in envChanges {
                if c.variable != nil && current.field(c.field) == nil && !set.contains(where: { $0.name == c.field }) {
                    Output.warn("'\(current.name)' has no field '\(c.field)' (yet); the variable name is kept for it")
                }
                env[c.field] = c.variable
            }
            if env != current.env { edit.env = env }
        }
        if !allowEnvVars.isEmpty || !noAllowEnvVars.isEmpty {
            for v in allowEnvVars where EnvNaming.dangerousReason(v) == nil {
                Output.warn("\(v) is not a guarded name: `coffer env` sets it without being allowed")
            }
            let allowed = current.allowedEnvNames.union(allowEnvVars).subtracting(noAllowEnvVars)
            if allowed != current.allowedEnvNames { edit.allowedEnvNames = allowed }
        }

        // Check what is written; all values when the source changes.
        let newSource: String? = edit.source ?? current.source
        let toCheck =
            edit.source != nil
            ? current.fields.filter { f in !unset.contains(f.name) && !set.contains { $0.name == f.name } } + set : set
        try CredentialGate.run(vault: vault, fields: toCheck, type: type ?? current.type, source: newSource, manifest: manifest, force: force)
        let item = try vault.edit(name, edit)
        Output.note("updated \(item.name)")
        if let p = policy, p != current.policy {
            Output.note(
                p == .localOnly
                    ? "'\(item.name)' is now local-only: it stays on this machine and leaves future bundles (copies already synced elsewhere are not removed)"
                    : "'\(item.name)' now syncs: it enters the next bundle")
        }
    }
}
