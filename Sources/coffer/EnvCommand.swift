import ArgumentParser
import CofferKit
import Foundation

enum EnvFormat: String, ExpressibleByArgument, CaseIterable {
    case dotenv, shell, json
}

struct Env: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "env",
        abstract: "Print credentials as environment variables (dotenv, shell or JSON).",
        discussion: """
            Each field of each item becomes one variable. The default name is the item name's last \
            segment and the field, upper-cased, other characters as '_' (work/openai + key gives \
            OPENAI_KEY). Override it per item with `coffer edit NAME --env-var FIELD=VAR`, or leave \
            a field out with `--env-var FIELD=-`. Without NAME, every item is printed. The output \
            holds secrets in clear text. Examples:
              eval "$(coffer env work/openai --format shell)"
              coffer env --format json work/openai db/prod
            Formats: dotenv (NAME=VALUE, quoted when needed), shell (export NAME='VALUE'), json (an \
            object, Schemas/env.schema.json). Variables that change how programs run (LD_*, PATH, IFS, ENV, BASH_ENV, \
            PROMPT_COMMAND, PS1-4, *PAGER, EDITOR, GIT_*, *PROXY*, PYTHON*, *_OPTIONS, COFFER_* …; \
            `coffer help references`) are refused unless the item allows them (`coffer edit NAME \
            --allow-env-var VAR`) or --allow-dangerous-names is given for the run. Exit codes: 65 two \
            fields map to one variable or a dangerous name, \
            66 no such item, 77 locked. See `coffer help references`.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Items to print (default: all).")
    var names: [String] = []

    @Option(help: "Output format: dotenv, shell or json.")
    var format: EnvFormat = .dotenv

    @Flag(help: "Allow variables that change how programs run (LD_*, PATH, PROMPT_COMMAND, *_OPTIONS…; `coffer help references`).")
    var allowDangerousNames = false

    func run() throws {
        let vault = try options.unlock()
        var items: [Item] = []
        if names.isEmpty {
            for s in try vault.list() { items.append(try vault.item(named: "id:" + s.id.hex)) }
        } else {
            for n in names {
                let item = try vault.item(named: n)
                // The same item named twice (or by name and by id) is listed once.
                if !items.contains(where: { $0.id == item.id }) { items.append(item) }
            }
        }
        for item in items { ItemWarnings.emit(for: item) }
        let vars = try EnvNaming.variables(for: items, allowDangerous: allowDangerousNames)
        for v in vars where v.value.utf8.contains(0) {
            throw CofferError(
                .badData, "'\(v.item)' field '\(v.field)' contains a NUL byte, which a variable cannot hold",
                hint: "leave it out with `coffer edit \(v.item) --env-var \(v.field)=-`")
        }
        switch format {
        case .json:
            try Output.json(Dictionary(vars.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a }))
        case .dotenv:
            let text = vars.map { Dotenv.line(name: $0.name, value: $0.value) + "\n" }.joined()
            Output.stdout(Data(text.utf8))
        case .shell:
            let text = vars.map { Dotenv.shellLine(name: $0.name, value: $0.value) + "\n" }.joined()
            Output.stdout(Data(text.utf8))
        }
    }
}
