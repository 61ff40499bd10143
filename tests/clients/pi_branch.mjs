// Branch a pi session in place with pi's own SessionManager (what `/tree` does in the TUI):
// move the leaf back to an earlier entry and prompt again, so the file holds two branches.
//   node pi_branch.mjs <pi package dir> <session file> <entry id> <prompt>
// Runs offline like the CLI: HOME (models.json) and PI_OFFLINE come from the caller.
const [pkgDir, sessionFile, entryId, prompt] = process.argv.slice(2);
const pi = await import(`${pkgDir}/dist/index.js`);
const { AuthStorage, createAgentSession, ModelRegistry, SessionManager } = pi;
const sessionManager = SessionManager.open(sessionFile);
sessionManager.branch(entryId);
const authStorage = AuthStorage.create();
const modelRegistry = ModelRegistry.create(authStorage);
const model = modelRegistry.find("mock", "m");
const { session } = await createAgentSession({ sessionManager, authStorage, modelRegistry, model, cwd: process.cwd() });
await session.prompt(prompt);
console.log(JSON.stringify({ sessionFile: sessionManager.getSessionFile(), leaf: sessionManager.getLeafId() }));
process.exit(0);
