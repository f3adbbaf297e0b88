import CofferKit

/// Runs the format check of `coffer add`/`edit` (CofferKit's
/// `Vault.validate`): prints catalogue warnings, refuses a value that
/// fails its source's rule unless `--force` was given.
enum CredentialGate {
    static func loadManifest(_ path: String?) throws(CofferError) -> RequirementsManifest? {
        try path.map { p throws(CofferError) in try RequirementsManifest.load(path: p) }
    }

    static func run(vault: Vault, fields: [Field], type: ItemType, source: String?, manifest: RequirementsManifest?, force: Bool) throws(CofferError) {
        guard !fields.isEmpty else { return }
        let check = try vault.validate(fields: fields, type: type, source: source, manifest: manifest)
        for w in check.warnings { Output.warn(w) }
        guard !check.passes else { return }
        if force {
            Output.warn("\(check.refusal.message); storing it anyway (--force)")
        } else {
            throw check.refusal
        }
    }
}
