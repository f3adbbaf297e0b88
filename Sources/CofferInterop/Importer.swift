import CofferCrypto
import CofferKit
import Foundation

/// `.env` files (docs/import-export.md#dotenv): the whole file is ONE item
/// of type `custom` whose fields are the variables (secret), each mapped
/// back to its own variable name, so `coffer run`/`coffer env` give the
/// same variables back.
public enum DotenvImport {
    public static func read(_ data: Data, file: String, itemName: String) throws(CofferError) -> ImportedFile {
        let text = try ImportError.text(data, file: file)
        let parsed = try Dotenv.parse(text, source: file)
        var out = ImportedFile()
        var e = InterchangeEntry(name: itemName, type: .custom, origin: "\(file) ('\(itemName)')")
        for v in parsed {
            if let i = e.fields.firstIndex(where: { $0.name == v.name }) {
                out.warnings.append(InterchangeWarning(entry: itemName, "variable \(v.name) is set twice; the later value (line \(v.line)) was kept"))
                e.fields[i].value = v.value
                continue
            }
            e.fields.append(Field(name: v.name, value: v.value, isSecret: true))
            e.env[v.name] = v.name
        }
        guard !e.fields.isEmpty else { throw ImportError.bad(file, nil, "no variables (expected NAME=VALUE lines)") }
        out.entries.append(e)
        return out
    }

    /// The item name for a file when no `--prefix` is given: its base name.
    public static func defaultName(for path: String) -> String {
        let base = (path as NSString).lastPathComponent
        return base.isEmpty ? "env" : base
    }
}

/// Reads any supported format into entries (the CLI's one entry point).
public enum Importer {
    public struct Options: Sendable {
        /// `csv`: explicit column mapping (`--columns`).
        public var columns: [(field: String, column: String)]?
        /// `csv`: skip rows that cannot be read, each named in a warning
        /// (`--lenient`).
        public var lenient = false
        /// `dotenv`: the item's name (`--prefix`, else the file name).
        public var dotenvName: String?
        /// `kdbx`: asks for the database password when it is needed.
        public var sourcePassword: (@Sendable () throws(CofferError) -> SecretBytes)?
        /// `kdbx`: a key file.
        public var keyFile: String?
        /// `pass`: progress (done, total).
        public var progress: (@Sendable (Int, Int) -> Void)?

        public init() {}
    }

    public static func read(_ format: ImportFormat, path: String, options: Options = Options()) throws(CofferError) -> ImportedFile {
        switch format {
        case .pass:
            return try PassStore.read(folder: path, progress: options.progress)
        case .keepassXML:
            return try KeePassXML.read(path: path)
        case .kdbx:
            guard let ask = options.sourcePassword else {
                throw CofferError(
                    .usage, "--from kdbx needs the database password", hint: "give it with --source-passphrase-fd N or --source-passphrase-file F")
            }
            return try KDBX.read(path: path, password: try ask(), keyFile: options.keyFile)
        case .bitwardenJSON:
            return try BitwardenJSON.read(try ImportError.read(path), file: path)
        case .onePasswordPUX:
            return try OnePUX.read(path: path)
        case .csv:
            return try CSVImport.read(try ImportError.read(path), file: path, columns: options.columns, lenient: options.lenient).0
        case .dotenv:
            return try DotenvImport.read(try ImportError.read(path), file: path, itemName: options.dotenvName ?? DotenvImport.defaultName(for: path))
        case .cofferJSON:
            return try CofferJSON.read(try ImportError.read(path), file: path)
        }
    }
}

/// A plaintext export and what it could not carry (named by item).
public struct ExportedFile: Sendable {
    public var data: Data
    /// One per item with something left out (CSV: attachments).
    public var warnings: [InterchangeWarning]
    /// CSV: cells that started like a formula and were written with a
    /// leading `'` (docs/import-export.md#csv-formulas).
    public var neutralisedCells = 0

    public init(data: Data, warnings: [InterchangeWarning] = []) {
        self.data = data
        self.warnings = warnings
    }
}

/// Writes the plaintext export formats.
public enum Exporter {
    public static func write(_ format: ExportFormat, entries: [InterchangeEntry], history: Bool, csvFormulasAsIs: Bool = false) throws(CofferError)
        -> ExportedFile
    {
        switch format {
        case .json: return ExportedFile(data: try CofferJSON.write(entries, history: history))
        case .csv: return CSVImport.write(entries, formulasAsIs: csvFormulasAsIs)
        case .keepassXML: return ExportedFile(data: KeePassXML.write(entries))
        }
    }
}
