import ArgumentParser
import CofferKit
import CofferSystem
import Foundation

struct Inject: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inject",
        abstract: "Render a template, replacing {{ coffer://… }} with secrets.",
        discussion: """
            Reads the template from -i FILE (default: stdin) and writes the result to -o FILE \
            (default: stdout). An output file is written atomically with mode 0600 (a temporary \
            file in the same folder, then renamed); it is replaced, never appended to. If any \
            reference cannot be resolved, nothing is written. Example:
              coffer inject -i config.yml.tpl -o config.yml
            where config.yml.tpl holds lines such as:
              api_key: {{ coffer://work/openai }}
            {{ … }} not starting with coffer:// is left as it is. Exit codes: 65 malformed or \
            ambiguous reference, 66 unknown item or field or missing template, 73 cannot write \
            the output, 77 locked. See `coffer help references`.
            """)

    @OptionGroup var options: VaultOptions

    @Option(name: [.customShort("i"), .customLong("in-file")], help: ArgumentHelp("Template file (default: stdin).", valueName: "file"))
    var input: String?

    @Option(
        name: [.customShort("o"), .customLong("out-file")], help: ArgumentHelp("Output file, created with mode 0600 (default: stdout).", valueName: "file"))
    var output: String?

    func run() throws {
        let input = self.input == "-" ? nil : self.input // `-i -`: standard input
        let source = input ?? "<stdin>"
        let text: String
        if let input {
            text = try ReferenceResolution.readText(input, what: "template")
        } else {
            guard options.passphraseFd != 0 else {
                throw CofferError(.usage, "stdin cannot carry both the passphrase and the template", hint: "give the template with -i FILE")
            }
            text = try ReferenceResolution.readStandardInput(what: "the template")
        }
        let template = try Template(parsing: text, source: source, environment: ProcessInfo.processInfo.environment)
        let values = try ReferenceResolution.resolve(template.references, options: options) { _ in source }
        let rendered = Data(template.render(values).utf8)
        if let output {
            do { try AtomicFile.writeAtomically(rendered, to: output) } catch { throw CofferError(error) }
            Output.note("wrote \(OutputFiles.name(output)) (\(template.references.count) reference\(template.references.count == 1 ? "" : "s"))")
        } else {
            Output.stdout(rendered)
        }
    }
}
