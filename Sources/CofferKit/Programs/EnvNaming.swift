/// How `coffer env` names variables (docs/references.md#naming).
///
/// Default: the item name's last `/` segment and the field name, each
/// with every run of characters other than ASCII letters and digits turned
/// into `_`, upper-cased, trimmed of `_`, joined by `_`; a leading digit
/// gets a `_` in front. `work/openai` + `key` → `OPENAI_KEY`,
/// `db/prod-pg` + `password` → `PROD_PG_PASSWORD`.
///
/// An item's stored `env` mapping (`coffer edit NAME --env-var FIELD=VAR`)
/// overrides the name of a field; `FIELD=-` leaves the field out.
public enum EnvNaming {
    /// The value of an `env` mapping entry that leaves a field out.
    public static let excluded = "-"

    static func sanitize(_ s: some StringProtocol) -> String {
        var out = ""
        var pendingUnderscore = false
        for u in s.unicodeScalars {
            if u.isASCII && (u.properties.isAlphabetic || ("0"..."9").contains(u)) {
                if pendingUnderscore && !out.isEmpty { out += "_" }
                pendingUnderscore = false
                out.unicodeScalars.append(u)
            } else {
                pendingUnderscore = true
            }
        }
        return out.uppercased()
    }

    /// The default variable for `field` of the item called `item`.
    public static func defaultName(item: String, field: String) -> String {
        let last = item.split(separator: "/").last.map(String.init) ?? item
        var name = [sanitize(last), sanitize(field)].filter { !$0.isEmpty }.joined(separator: "_")
        if name.isEmpty { name = "_" }
        if let f = name.unicodeScalars.first, ("0"..."9").contains(f) { name = "_" + name }
        return name
    }

    /// Whether `v` may be stored as an override: a variable name or `-`.
    public static func isValidOverride(_ v: String) -> Bool {
        v == excluded || Dotenv.isValidName(v)
    }

    public struct Variable: Sendable, Equatable {
        public var name: String
        public var value: String
        public var item: String
        public var field: String
        public var isSecret: Bool
    }

    /// The variables for `items`, in order (items as given, fields in the
    /// item's order). Two fields mapping to one name is an error.
    ///
    /// A variable that changes how a shell or a program runs (see
    /// ``dangerousReason(_:)``) is refused unless `allowDangerous`: an item
    /// name or a synced env mapping chooses the name, and another replica
    /// (or whoever named the item) must not be able to set `LD_PRELOAD` or
    /// `PROMPT_COMMAND` in a shell that runs `eval "$(coffer env …)"`.
    public static func variables(for items: [Item], allowDangerous: Bool = false) throws(CofferError) -> [Variable] {
        var out: [Variable] = []
        var seen: [String: (item: String, field: String)] = [:]
        for item in items {
            for f in item.fields {
                let name = item.env[f.name] ?? defaultName(item: item.name, field: f.name)
                if name == excluded { continue }
                if let other = seen[name] {
                    throw CofferError(
                        .badData,
                        "variable \(name) would hold both '\(other.item)' field '\(other.field)' and '\(item.name)' field '\(f.name)'",
                        hint: "name one of them with `coffer edit \(item.name) --env-var \(f.name)=OTHER_NAME` (or =- to leave it out), or select fewer items")
                }
                if !allowDangerous, let why = dangerousReason(name) {
                    throw CofferError(
                        .badData,
                        "'\(item.name)' field '\(f.name)' would set \(name), \(why)",
                        hint: "rename it with `coffer edit \(item.name) --env-var \(f.name)=OTHER_NAME` (or =- to leave it out), or pass --allow-dangerous-names if you mean it")
                }
                seen[name] = (item.name, f.name)
                out.append(Variable(name: name, value: f.value, item: item.name, field: f.name, isSecret: f.isSecret))
            }
        }
        return out
    }

    // MARK: Dangerous names (docs/references.md#dangerous-names)

    /// Names that change how a shell, the dynamic linker or a common
    /// interpreter behaves, or that Coffer itself reads.
    public static let dangerousNames: [String: String] = [
        "PATH": "the search path for commands",
        "IFS": "how the shell splits words",
        "ENV": "a file every POSIX shell runs at start",
        "BASH_ENV": "a file bash runs at start",
        "ZDOTDIR": "where zsh reads its start-up files",
        "PROMPT_COMMAND": "a command bash runs before every prompt",
        "PS0": "bash's prompt (it may run commands)",
        "PS1": "the shell's prompt (it may run commands)",
        "PS2": "the shell's prompt (it may run commands)",
        "PS3": "the shell's prompt (it may run commands)",
        "PS4": "the shell's trace prompt (it may run commands)",
        "SHELLOPTS": "the shell's options",
        "BASHOPTS": "bash's options",
        "CDPATH": "where `cd` looks for folders",
        "GLOBIGNORE": "how the shell expands patterns",
        "HOME": "the home folder programs read their configuration from",
        "SHELL": "the shell programs start",
        "TMPDIR": "where programs create temporary files",
        "HISTFILE": "where the shell writes its history",
        "EDITOR": "the editor programs start", "VISUAL": "the editor programs start",
        "PAGER": "the pager programs start", "MANPAGER": "the pager man starts", "BROWSER": "the browser programs start",
        "LESSOPEN": "a command less runs", "LESSCLOSE": "a command less runs",
        "GCONV_PATH": "where glibc loads code from", "GLIBC_TUNABLES": "glibc's internal settings",
        "HOSTALIASES": "how host names resolve", "LOCALDOMAIN": "how host names resolve",
        "PERL5LIB": "where Perl loads code from", "PERL5OPT": "options Perl runs with", "PERLLIB": "where Perl loads code from",
        "PYTHONPATH": "where Python loads code from", "PYTHONSTARTUP": "a file Python runs at start", "PYTHONHOME": "where Python loads code from",
        "RUBYOPT": "options Ruby runs with", "RUBYLIB": "where Ruby loads code from",
        "NODE_PATH": "where Node.js loads code from",
        "GIT_SSH": "the command git runs for ssh", "GIT_SSH_COMMAND": "the command git runs for ssh", "GIT_EXEC_PATH": "where git runs its commands from",
        "GIT_ASKPASS": "the program git asks for passwords", "SSH_ASKPASS": "the program ssh asks for passwords",
        "SUDO_ASKPASS": "the program sudo asks for passwords",
    ]

    /// Prefixes of dangerous names: the dynamic linker's (`LD_PRELOAD`…),
    /// bash's exported functions, git's injected configuration, Coffer's own.
    public static let dangerousPrefixes: [(prefix: String, why: String)] = [
        ("LD_", "a setting of the dynamic linker (it can load code into every program)"),
        ("DYLD_", "a setting of the dynamic linker"),
        ("BASH_FUNC_", "a function bash imports"),
        ("GIT_CONFIG", "configuration git applies (it can run commands)"),
        ("COFFER_", "a setting of Coffer itself"),
    ]

    /// Suffixes of dangerous names: option variables that interpreters and
    /// tools read (`NODE_OPTIONS`, `JAVA_TOOL_OPTIONS`, `RES_OPTIONS`,
    /// `JAVA_OPTS`…), which can load code.
    public static let dangerousSuffixes = ["_OPTIONS", "_OPTS"]

    /// Why `name` must not be set from an item, or nil when it is harmless.
    public static func dangerousReason(_ name: String) -> String? {
        if let why = dangerousNames[name] { return why }
        for p in dangerousPrefixes where name.hasPrefix(p.prefix) { return p.why }
        for s in dangerousSuffixes where name.hasSuffix(s) { return "options a program runs with (they can load code)" }
        return nil
    }
}
