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

    /// The variable an `@env` line `+VAR` allows (``Item/allowedEnvNames``),
    /// or nil when the line is not one.
    static func allowedName(inLine line: Substring) -> String? {
        guard line.hasPrefix("+") else { return nil }
        let v = String(line.dropFirst())
        return Dotenv.isValidName(v) ? v : nil
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
    /// ``dangerousReason(_:)``) is refused unless `allowDangerous` or the
    /// item lists it in ``Item/allowedEnvNames`` (`coffer edit NAME
    /// --allow-env-var VAR`): an item name or a synced env mapping chooses
    /// the name, and whoever named the item (an imported file, another
    /// replica) must not be able to set `LD_PRELOAD`, `GIT_PAGER` or
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
                        remedy: .init(
                            .renameVariable, "give one of them another variable name (or none, to leave it out), or select fewer items", item: item.name,
                            field: f.name))
                }
                if !allowDangerous, !item.allowedEnvNames.contains(name), let why = dangerousReason(name) {
                    // One line: what is wrong and the opt-in (the value is never named).
                    throw CofferError(
                        .badData,
                        "'\(item.name)' field '\(f.name)' would set \(name), \(why)",
                        remedy: .init(
                            .allowVariableName,
                            "if you mean it, allow \(name) for this item (or dangerous names for this run), else give the field another variable name",
                            item: item.name, field: f.name, name: name))
                }
                seen[name] = (item.name, f.name)
                out.append(Variable(name: name, value: f.value, item: item.name, field: f.name, isSecret: f.isSecret))
            }
        }
        return out
    }

    // MARK: Dangerous names (docs/references.md#dangerous-names)

    /// Names that change how a shell, the dynamic linker, a common
    /// interpreter or tool behaves, or that Coffer itself reads. Compared
    /// upper-cased: zsh ties `path` to `PATH`, curl reads `http_proxy`.
    public static let dangerousNames: [String: String] = [
        "PATH": "the search path for commands", "FPATH": "where zsh loads functions from",
        "IFS": "how the shell splits words",
        "ENV": "a file every POSIX shell runs at start",
        "ZDOTDIR": "where zsh reads its start-up files",
        "PROMPT_COMMAND": "a command bash runs before every prompt",
        "PS0": "bash's prompt (it may run commands)",
        "PS1": "the shell's prompt (it may run commands)",
        "PS2": "the shell's prompt (it may run commands)",
        "PS3": "the shell's prompt (it may run commands)",
        "PS4": "the shell's trace prompt (it may run commands)",
        "PROMPT": "zsh's prompt (it may run commands)", "RPROMPT": "zsh's prompt (it may run commands)",
        "RPS1": "zsh's prompt (it may run commands)", "RPS2": "zsh's prompt (it may run commands)",
        "SHELLOPTS": "the shell's options",
        "BASHOPTS": "bash's options",
        "CDPATH": "where `cd` looks for folders",
        "GLOBIGNORE": "how the shell expands patterns",
        "HOME": "the home folder programs read their configuration from",
        "SHELL": "the shell programs start",
        "TMPDIR": "where programs create temporary files",
        "HISTFILE": "where the shell writes its history",
        "EDITOR": "the editor programs start (it can run commands)", "VISUAL": "the editor programs start (it can run commands)",
        "BROWSER": "the browser programs start",
        "EXINIT": "commands vi runs at start", "VIMINIT": "commands vim runs at start", "GVIMINIT": "commands gvim runs at start",
        "MYVIMRC": "the file vim runs at start", "MYGVIMRC": "the file gvim runs at start",
        "GCONV_PATH": "where glibc loads code from", "GLIBC_TUNABLES": "glibc's internal settings",
        "NLSPATH": "where programs load message catalogues from", "LOCPATH": "where glibc loads locales from",
        "HOSTALIASES": "how host names resolve", "LOCALDOMAIN": "how host names resolve",
        "PERLLIB": "where Perl loads code from",
        "RUBYOPT": "options Ruby runs with", "RUBYLIB": "where Ruby loads code from", "RUBYPATH": "where Ruby looks for scripts",
        "RUBYSHELL": "the shell Ruby starts",
        "GEM_HOME": "where Ruby loads gems from", "GEM_PATH": "where Ruby loads gems from",
        "NODE_PATH": "where Node.js loads code from", "NODE_EXTRA_CA_CERTS": "which certificates Node.js trusts",
        "NODE_TLS_REJECT_UNAUTHORIZED": "whether Node.js checks certificates",
        "CLASSPATH": "where Java loads code from", "PHPRC": "the configuration PHP runs with",
        "PHP_INI_SCAN_DIR": "the configuration PHP runs with", "GOFLAGS": "flags every go command runs with (they can run programs)",
        "RUSTC_WRAPPER": "the program cargo runs as the compiler",
        "SSH_ASKPASS": "the program ssh asks for passwords", "SUDO_ASKPASS": "the program sudo asks for passwords",
        "SSH_AUTH_SOCK": "which ssh agent programs use", "GNUPGHOME": "where GnuPG reads its keys and configuration",
        "SSLKEYLOGFILE": "a file TLS libraries write their session keys to",
        "SSL_CERT_FILE": "which certificates TLS trusts", "SSL_CERT_DIR": "which certificates TLS trusts",
        "CURL_CA_BUNDLE": "which certificates curl trusts", "REQUESTS_CA_BUNDLE": "which certificates Python's requests trusts",
    ]

    /// Prefixes of dangerous names, compared upper-cased.
    public static let dangerousPrefixes: [(prefix: String, why: String)] = [
        ("LD_", "a setting of the dynamic linker (it can load code into every program)"),
        ("DYLD_", "a setting of the dynamic linker"),
        ("BASH_", "a setting of bash (BASH_ENV runs a file, BASH_FUNC_ defines functions)"),
        ("GIT_", "a setting of git (it can run commands: GIT_PAGER, GIT_SSH_COMMAND, GIT_CONFIG_*…)"),
        ("LESS", "a setting of less (LESSOPEN runs a command)"),
        ("PYTHON", "a setting of Python (it can load code)"),
        ("PERL", "a setting of Perl (it can load code)"),
        ("RUBY_", "a setting of Ruby"),
        ("LUA_", "a setting of Lua (LUA_INIT runs code)"),
        ("OPENSSL_", "a setting of OpenSSL (it can load code)"),
        ("MALLOC_", "a setting of glibc's allocator"),
        ("NPM_CONFIG_", "a setting of npm (it can run commands)"),
        ("XDG_", "where programs read their configuration and data from"),
        ("COFFER_", "a setting of Coffer itself"),
    ]

    /// Suffixes of dangerous names, compared upper-cased: pagers
    /// (`PAGER`, `GIT_PAGER`, `MANPAGER`, `SYSTEMD_PAGER`…) and option
    /// variables that interpreters and tools read (`NODE_OPTIONS`,
    /// `JAVA_TOOL_OPTIONS`, `RES_OPTIONS`, `JAVA_OPTS`…), which can run or
    /// load code.
    public static let dangerousSuffixes: [(suffix: String, why: String)] = [
        ("PAGER", "the pager a program starts (it can run commands)"),
        ("_OPTIONS", "options a program runs with (they can load code)"),
        ("_OPTS", "options a program runs with (they can load code)"),
    ]

    /// Why `name` must not be set from an item, or nil when it is harmless.
    /// Case does not matter: `http_proxy` is refused as `HTTP_PROXY` is.
    public static func dangerousReason(_ name: String) -> String? {
        let upper = name.uppercased()
        if let why = dangerousNames[upper] { return why }
        for p in dangerousPrefixes where upper.hasPrefix(p.prefix) { return p.why }
        for s in dangerousSuffixes where upper.hasSuffix(s.suffix) { return s.why }
        if upper.contains("PROXY") { return "a proxy programs send their traffic (and credentials) through" }
        return nil
    }
}
