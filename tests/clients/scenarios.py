"""The scripted sessions recorded from the real clients (scripts/record_sessions.py) and
replayed by tests/test_clients.py.

Invariants:

* A scenario is data: prompts (the first one starts the session, the others continue it
  with ``--resume``) and a :class:`Script` keyed by a tag in each prompt (``[bash]``), so
  the mock's reply depends only on the request, never on server state.
* Scripts may depend on the working folder (Claude Code's file tools take absolute paths),
  hence functions of ``cwd``.
* Every tool call does something real and quick in the working folder; nothing touches the
  network or anything outside ``cwd``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .mock_servers import Script, Text, Thinking, Tool, WebSearchCall

# A 1x1 red PNG, written by the image scenarios so the client reads a real image file.
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

RESUME_PROMPT = "[resume-check] One more thing: reply OK."
RESUME_REPLY = "OK."


@dataclass
class Scenario:
    name: str
    vendor: str  # a key of SCENARIOS
    prompts: list[str]
    script: Script
    covers: str = ""
    files: dict[str, str] = field(default_factory=dict)  # files to create in cwd first
    # per prompt after the first: "resume" (the session so far), "fork" (a new session
    # forked from the first one; pi: ``pi --fork``, a second file copied from it),
    # "original" (resume the first session again) or "branch" (pi: back to the first
    # answer and on from there, in the same file, with pi's own SessionManager)
    actions: list[str] = field(default_factory=list)

    def write_files(self, cwd: Path) -> None:
        for rel, text in self.files.items():
            (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
            (cwd / rel).write_text(text)

    def action(self, i: int) -> str:
        return "new" if i == 0 else (self.actions[i - 1] if i - 1 < len(self.actions) else "resume")


def _with_resume_check(turns: dict[str, list[list]]) -> Script:
    return Script(turns={**turns, "[resume-check]": [[Text(RESUME_REPLY)]]})


def claude_scenarios(cwd: Path) -> list[Scenario]:
    hello = str(cwd / "hello.py")
    dot = str(cwd / "dot.png")
    return [
        Scenario("text", "claude-code", ["[text] Say hello.", "[text-2] Say it again."], _with_resume_check({
            "[text]": [[Thinking("The user wants a greeting."), Text("Hello from the mock model.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "thinking with a signature, text, a second turn added by --resume"),
        Scenario("bash", "claude-code", ["[bash] Run two commands."], _with_resume_check({
            "[bash]": [
                [Text("Running echo."), Tool("Bash", {"command": "echo hello-from-bash", "description": "Print a greeting"})],
                [Tool("Bash", {"command": "ls /nonexistent-sesh-dir", "description": "List a missing folder"})],
                [Text("The second command failed as expected.")],
            ],
        }), "Bash tool calls, one succeeding and one failing (is_error)"),
        Scenario("files", "claude-code", ["[files] Create and edit hello.py."], _with_resume_check({
            "[files]": [
                [Tool("Write", {"file_path": hello, "content": "print('hello')\n"})],
                [Tool("Edit", {"file_path": hello, "old_string": "print('hello')", "new_string": "print('hello, world')"})],
                [Text("hello.py now prints hello, world.")],
            ],
        }), "Write (create) and Edit with structuredPatch in toolUseResult"),
        Scenario("image", "claude-code", ["[image] Look at dot.png."], _with_resume_check({
            "[image]": [
                [Tool("Bash", {"command": f"echo {PNG_B64} | base64 -d > dot.png", "description": "Write a PNG"})],
                [Tool("Read", {"file_path": dot})],
                [Text("It is a 1x1 red pixel.")],
            ],
        }), "Read of a PNG: an image block inside a tool_result"),
        Scenario("agent", "claude-code", ["[agent] Ask a helper to count."], _with_resume_check({
            "[agent]": [
                [Tool("Agent", {"description": "Count to three", "prompt": "[subagent] Count to three with echo.",
                                "subagent_type": "general-purpose"})],
                [Text("The helper counted to three.")],
            ],
            "[subagent]": [
                [Tool("Bash", {"command": "echo 1 2 3", "description": "Count"})],
                [Text("1 2 3")],
            ],
        }), "Agent tool: subagents/agent-*.jsonl and agent-*.meta.json, the trunk tool_result"),
        Scenario("bgagent", "claude-code", ["[bgagent] Ask a background helper to count."], _with_resume_check({
            # the subagent's last text comes back inside the <task-notification> prompt, so
            # its tag keys the parent's reply to the notification (checked first)
            "[bg-done]": [[Text("The background helper reported 4 5 6.")]],
            "[bgagent]": [
                [Tool("Agent", {"description": "Count in the background", "prompt": "[bgsub] Count from four to six with echo.",
                                "subagent_type": "general-purpose", "run_in_background": True})],
                # busy while the helper runs: its notification arrives mid-turn, as an
                # attachment queued_command on the next request (not a prompt of its own)
                [Text("The helper is counting in the background."), Tool("Bash", {"command": "sleep 6", "description": "Wait"})],
                [Text("Done waiting.")],
            ],
            "[bgsub]": [
                [Tool("Bash", {"command": "echo 4 5 6", "description": "Count"})],
                [Text("[bg-done] 4 5 6")],
            ],
        }), "Agent with run_in_background (>=2.1.3xx): 'Async agent launched successfully', the result "
            "later as an attachment queued_command holding <task-notification> (min version 2.1.332)"),
        Scenario("slash", "claude-code", ["/greet Ada"], _with_resume_check({
            "[greet]": [[Text("Hello, Ada.")]],
        }), "a custom slash command (.claude/commands/greet.md): the <command-message>/<command-name>/"
            "<command-args> line, then the expanded prompt as an isMeta line",
            files={".claude/commands/greet.md": "[greet] Greet the user named $ARGUMENTS.\n"}),
        Scenario("bigoutput", "claude-code", ["[bigoutput] Print many numbers."], _with_resume_check({
            "[bigoutput]": [
                [Tool("Bash", {"command": "seq 1 20000", "description": "Print 20000 numbers"})],
                [Text("That printed 20000 lines.")],
            ],
        }), "a Bash output too large for the transcript: <session>/tool-results/*.txt beside it"),
        Scenario("fork", "claude-code", ["[fork-a] Run a command.", "[fork-b] Take another path.",
                                         "[fork-c] Continue the first path."], Script(turns={
            "[fork-a]": [
                [Tool("Bash", {"command": "echo trunk", "description": "Print trunk"})],
                [Text("The trunk ran.")],
            ],
            "[fork-b]": [[Text("This is the forked path.")]],
            "[fork-c]": [[Text("The original continues.")]],
        }), "--resume ID --fork-session: a new session file that copies the history (same uuids), "
            "then the original resumed", actions=["fork", "original"]),
    ]


def codex_scenarios(cwd: Path) -> list[Scenario]:
    add = "*** Begin Patch\n*** Add File: hello.py\n+print('hello')\n*** End Patch\n"
    update = "*** Begin Patch\n*** Update File: hello.py\n@@\n-print('hello')\n+print('hello, world')\n*** End Patch\n"
    return [
        Scenario("text", "codex", ["[text] Say hello.", "[text-2] Say it again."], _with_resume_check({
            "[text]": [[Thinking("The user wants a greeting."), Text("Hello from the mock model.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "reasoning summary with encrypted_content, text, a second turn added by exec resume"),
        Scenario("exec", "codex", ["[exec] Run two commands."], _with_resume_check({
            "[exec]": [
                [Text("Running echo."), Tool("exec_command", {"cmd": "echo hello-from-exec"})],
                [Tool("exec_command", {"cmd": "ls /nonexistent-sesh-dir"})],
                [Text("The second command failed as expected.")],
            ],
        }), "exec_command function calls, one succeeding and one failing"),
        Scenario("patch", "codex", ["[patch] Create and edit hello.py."], _with_resume_check({
            "[patch]": [
                [Tool("apply_patch", add)],
                [Tool("apply_patch", update)],
                [Text("hello.py now prints hello, world.")],
            ],
        }), "apply_patch as a freeform custom_tool_call (Add File, Update File), patch_apply_end"),
        Scenario("image", "codex", ["[image] Look at dot.png."], _with_resume_check({
            "[image]": [
                [Tool("exec_command", {"cmd": f"echo {PNG_B64} | base64 -d > dot.png"})],
                [Tool("view_image", {"path": str(cwd / "dot.png")})],
                [Text("It is a 1x1 red pixel.")],
            ],
        }), "view_image: an input_image (data URL) in a function_call_output"),
        Scenario("websearch", "codex", ["[websearch] Search the web for sesh-archive."], _with_resume_check({
            "[websearch]": [[WebSearchCall("sesh-archive sqlite session logs"), Text("I searched the web.")]],
        }), "a web_search_call item (server-side tool, no output item)"),
        Scenario("fork", "codex", ["[fork-a] Run a command.", "[fork-b] Take another path.",
                                   "[fork-c] Continue the first path."], Script(turns={
            "[fork-a]": [
                [Tool("exec_command", {"cmd": "echo trunk"})],
                [Text("The trunk ran.")],
            ],
            "[fork-b]": [[Text("This is the forked path.")]],
            "[fork-c]": [[Text("The original continues.")]],
        }), "exec fork ID: a new rollout naming forked_from_id (history not copied), then the "
            "original resumed", actions=["fork", "original"]),
    ]


def gemini_like_scenarios(vendor: str) -> list[Scenario]:
    """Gemini CLI and Qwen Code (its fork) share tool names: ``run_shell_command``."""
    return [
        Scenario("text", vendor, ["[text] Say hello.", "[text-2] Say it again."], _with_resume_check({
            "[text]": [[Text("Hello from the mock model.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "plain text, a second turn added by --resume"),
        Scenario("shell", vendor, ["[shell] Run two commands."], _with_resume_check({
            "[shell]": [
                [Text("Running echo."), Tool("run_shell_command", {"command": "echo hello-from-shell",
                                                                   "description": "Print a greeting"})],
                [Tool("run_shell_command", {"command": "ls /nonexistent-sesh-dir", "description": "List a missing folder"})],
                [Text("The second command failed as expected.")],
            ],
        }), "run_shell_command calls, one succeeding and one failing"),
        Scenario("reasoning", vendor, ["[reasoning] Think, then answer."], _with_resume_check({
            "[reasoning]": [[Thinking("The user wants me to think first."), Text("I thought about it: 42.")]],
        }), "reasoning (thought parts) before the answer"),
    ]


def pi_scenarios(cwd: Path) -> list[Scenario]:
    return [
        Scenario("text", "pi", ["[text] Say hello.", "[text-2] Say it again."], _with_resume_check({
            "[text]": [[Thinking("The user wants a greeting."), Text("Hello from the mock model.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "thinking (reasoning_content, its signature), text, model_change, usage with cost, a second turn by --session"),
        Scenario("bash", "pi", ["[bash] Run two commands."], _with_resume_check({
            "[bash]": [
                [Text("Running echo."), Tool("bash", {"command": "echo hello-from-bash"})],
                [Tool("bash", {"command": "ls /nonexistent-sesh-dir"})],
                [Text("The second command failed as expected.")],
            ],
        }), "bash tool calls, one succeeding and one failing (isError)"),
        Scenario("branch", "pi", ["[one] First question.", "[two] Second question.", "[alt] Another second question."],
                 _with_resume_check({
                     "[one]": [[Text("First answer.")]],
                     "[two]": [[Text("Second answer.")]],
                     "[alt]": [[Text("Alternative answer.")]],
                 }), "a branch in the same file (the tree by id/parentId): [alt] grows from the first answer",
                 actions=["resume", "branch"]),
        Scenario("fork", "pi", ["[one] First question.", "[alt] Another question."], _with_resume_check({
            "[one]": [[Text("First answer.")]],
            "[alt]": [[Text("Alternative answer.")]],
        }), "pi --fork: a second file with parentSession and the parent's entries copied", actions=["fork"]),
    ]


def copilot_scenarios(cwd: Path) -> list[Scenario]:
    dot = str(cwd / "dot.png")
    return [
        Scenario("text", "copilot", ["[text] Say hello.", "[text-2] Say it again."], _with_resume_check({
            "[text]": [[Thinking("The user wants a greeting."), Text("Hello from the mock model.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "reasoningText, text, session.usage_record, a second turn by --resume (session.resume)"),
        Scenario("bash", "copilot", ["[bash] Run two commands."], _with_resume_check({
            "[bash]": [
                [Text("Running echo."), Tool("bash", {"command": "echo hello-from-bash", "description": "Print a greeting"})],
                [Tool("bash", {"command": "ls /nonexistent-sesh-dir", "description": "List a missing folder"})],
                [Text("The second command failed as expected.")],
            ],
        }), "bash toolRequests and tool.execution_complete, one succeeding and one failing"),
        Scenario("image", "copilot", ["[image] Look at dot.png."], _with_resume_check({
            "[image]": [
                [Tool("bash", {"command": f"echo {PNG_B64} | base64 -d > dot.png", "description": "Write a PNG"})],
                [Tool("view", {"path": dot})],
                [Text("It is a 1x1 red pixel.")],
            ],
        }), "view of a PNG: session.binary_asset (the bytes), binaryResultsForLlm in tool.execution_complete naming it"),
        Scenario("agent", "copilot", ["[agent] Ask a helper to count."], _with_resume_check({
            "[agent]": [
                [Tool("task", {"name": "counter", "description": "Count to three", "agent_type": "task",
                               "prompt": "[subagent] Count to three with echo.", "mode": "sync"})],
                [Text("The helper counted to three.")],
            ],
            "[subagent]": [
                [Tool("bash", {"command": "echo 1 2 3", "description": "Count"})],
                [Text("1 2 3")],
            ],
        }), "task tool (a sync subagent): the subagent's events with agentId, subagent.started/completed"),
    ]


def opencode_scenarios(cwd: Path) -> list[Scenario]:
    return [
        Scenario("text", "opencode", ["[text] Say hello.", "[text-2] Say it again."], _with_resume_check({
            "[text]": [[Text("Hello from the mock model.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "plain text, a title request, step-finish usage with cost, a second turn by --session"),
        Scenario("bash", "opencode", ["[bash] Run two commands."], _with_resume_check({
            "[bash]": [
                [Text("Running echo."), Tool("bash", {"command": "echo hello-from-bash", "description": "Print a greeting"})],
                [Tool("bash", {"command": "ls /nonexistent-sesh-dir", "description": "List a missing folder"})],
                [Text("The second command failed as expected.")],
            ],
        }), "bash tool parts (pending, running, completed), one succeeding and one failing (exit code in metadata)"),
        Scenario("reasoning", "opencode", ["[reasoning] Think, then answer.", "[text-2] Say it again."], _with_resume_check({
            "[reasoning]": [[Thinking("The user wants me to think first."), Text("I thought about it: 42.")]],
            "[text-2]": [[Text("Hello again.")]],
        }), "reasoning parts (reasoning_content) before the answer, reasoning tokens, then a resume"),
    ]


SCENARIOS = {"claude-code": claude_scenarios, "codex": codex_scenarios,
             "gemini": lambda cwd: gemini_like_scenarios("gemini"), "qwen": lambda cwd: gemini_like_scenarios("qwen"),
             "pi": pi_scenarios, "copilot": copilot_scenarios, "opencode": opencode_scenarios}


def scenarios(vendor: str, cwd: Path) -> list[Scenario]:
    return SCENARIOS[vendor](cwd)
