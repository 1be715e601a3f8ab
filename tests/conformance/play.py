"""How the scripted model (mock_model.py) plays each git-tlv4 role from the prompt it gets.

The mock keeps no state: everything is decided from git-tlv4's prompt as the CLI forwards
it (`# Your role: ROLE`, `- Task: ID`, `- Phase: …`, `- Expected: …`, the description, the
template, and `# Your previous answer was not accepted` on a retry).

- analyst   `spec/discovery-context.json` in `files`;
- writer    the documents of its phase, filled from the template in the prompt (every part
            and heading kept, every placeholder given text);
- planner   `plan/plan.json` and `plan/.task/TASK-NNN.json`: a Medium plan of two tasks, one
            file each (PLAN_FILES), so the coordinator makes one IMPL task per plan task;
- executor  the files its description names (`- TASK-NNN: title (files: PATH)`), written
            with the CLI's own tool, then (when the prompt says it has a shell and the CLI
            offers a shell tool) one command, `shell_command`, then the result block listing
            the files; without a plan (the one-task pipeline) `conformance-<cli>-<TASK>.txt`;
- critic    `discussions/<ROUND>-<perspective>.json` (rating 4, risk low);
- reviewer  `artifacts/<TASK>-agent-review.json` (verdict APPROVE, one low finding).

Every document and finding carries MARK and the CLI's name, so the checks can tell the
agent's work from a builtin stand-in.

Contract tests (`--contract once|always` of mock_model.py): the final answer of an executor
is out of contract (a result block with an unknown key) on its first answer (`once`: the
retry is answered properly) or on every answer (`always`).
"""

import json
import re

MARK = "scripted-by-mock-model"
RETRY_HEADING = "# Your previous answer was not accepted"
BAD_MARK = "OUT-OF-CONTRACT-ANSWER"

# The planner's plan: (task id, title, path, content).
PLAN_FILES = [
    ("TASK-001", "Add the subtract function", "app/subtract.py",
     "def subtract(a, b):\n    \"\"\"a minus b.\"\"\"\n    return a - b\n"),
    ("TASK-002", "Test the subtract function", "tests/test_subtract.py",
     "import unittest\n\nfrom app.subtract import subtract\n\n\n"
     "class SubtractTest(unittest.TestCase):\n    def test_subtract(self):\n"
     "        self.assertEqual(subtract(5, 3), 2)\n"),
]


class Prompt:
    """What git-tlv4's prompt says, read from the texts of a request."""

    def __init__(self, text):
        # OpenCode's `run` hands its message argument to the model wrapped in double quotes,
        # with every quote inside escaped (`"# Your role: …\\"unknown\\"…"`).
        if re.search(r'^"# Your role: ', text, re.M):
            text = text.replace('\\"', '"')
        self.text = text
        self.role = field(r'^"?# Your role: (\S+)', text)
        self.task = field(r"^- Task: (\S+)", text) or field(r"# The task: (\S+)", text)
        self.phase = field(r"^- Phase: (\S+)", text)
        self.session = field(r"^- Session: (\S+)", text)
        self.expected = field(r"^- Expected: (.+)$", text)
        self.retry = RETRY_HEADING in text
        # The executor of a session with shell on is told it has a shell, and the tests'
        # command when git-tlv4 knows one.
        self.shell = "You have a shell in your working directory" in text
        self.test_command = field(r"^- Test command: `(.+)` \(from ", text)

    def template(self):
        """The template of the `# Template` section (the body of its fence), or None."""
        i = self.text.find("\n# Template\n")
        if i < 0:
            return None
        m = re.search(r"^(`{3,})markdown\n(.*?)^\1$", self.text[i:], re.S | re.M)
        return m.group(2) if m else None

    def plan_items(self):
        """The plan tasks of an executor's description: [(plan task, title, [paths])]."""
        items = []
        for m in re.finditer(r"^\s*- (TASK-\d+): (.*) \(files: ([^)]*)\)\s*$", self.text, re.M):
            paths = [p.strip() for p in m.group(3).split(",") if p.strip()]
            items.append((m.group(1), m.group(2), paths))
        return items


def field(pattern, text):
    m = re.search(pattern, text, re.M)
    return m.group(1).strip() if m else None


def safe(task):
    return re.sub(r"[^A-Za-z0-9._-]", "_", task or "task")


# --- the executor -------------------------------------------------------------------------


def executor_files(cli, prompt):
    """The (path, content) pairs an executor task writes."""
    items = prompt.plan_items()
    if not items:
        name = "conformance-%s-%s.txt" % (cli, safe(prompt.task))
        return [(name, "%s was here: written by %s through the scripted model\n"
                 % (prompt.task, cli))]
    out = []
    known = {path: content for _, _, path, content in PLAN_FILES}
    for plan_task, title, paths in items:
        for p in paths:
            out.append((p, known.get(p, "%s (%s) written by %s: %s\n" % (plan_task, title, cli, MARK))))
    return out


# What the shell step prints: the marker followed by the directory it ran in (the command
# itself has the marker before `&& pwd`, so the marker followed by a path in a request shows
# that the command ran). No command substitution: Gemini CLI refuses `$(…)`.
SHELL_MARK = "conformance-shell-ran-in-"


def shell_command(prompt):
    """The command an executor with a shell runs once its files are written: where it runs,
    then the project's tests when the prompt names their command."""
    command = "printf %s && pwd" % SHELL_MARK
    if prompt.test_command:
        command += " && " + prompt.test_command
    return command


def executor_final(cli, prompt, written, tool_output):
    paths = [p for p, _ in written]
    if prompt.plan_items():
        summary = "%s: wrote %s for %s" % (prompt.task, ", ".join(paths),
                                           ", ".join(t for t, _, _ in prompt.plan_items()))
    else:
        summary = "Created %s with one line naming the task" % paths[0]
    result = {
        "summary": summary,
        "state_update": {
            "key_findings": ["The working directory accepted the change"],
            "decisions": ["Wrote exactly the planned files, because the plan names them"],
            "files_modified": paths,
            "verification": "The %s tool reported success: %s"
            % (cli, " ".join(str(tool_output).split())[:120]),
        },
    }
    return "I changed %s.\n\n%s" % (", ".join("`%s`" % p for p in paths), block(result))


def block(obj):
    return "```json\n%s\n```\n" % json.dumps(obj, indent=2)


def out_of_contract(cli, prompt):
    """An answer whose result block breaks the contract (an unknown key)."""
    result = {"summary": "%s: %s answer of %s" % (prompt.task, BAD_MARK, cli),
              "state_update": {"files_modified": []}, "status_text": "done"}
    return "%s: here is my result.\n\n%s" % (BAD_MARK, block(result))


def breaks_contract(mode, prompt):
    """Whether this final answer is to be out of contract (--contract)."""
    if mode == "always":
        return True
    return mode == "once" and not prompt.retry


# --- the document roles -------------------------------------------------------------------


def document_answer(cli, prompt):
    """The final answer of a document role (everything but the executor)."""
    role = prompt.role
    if role == "analyst":
        files = {"spec/discovery-context.json": discovery_context(cli, prompt)}
        summary = "Discovery context of a Python project, by %s" % cli
    elif role == "writer":
        files = write_documents(cli, prompt)
        summary = "%s documents for %s: %s" % (prompt.phase, cli, ", ".join(sorted(files)))
    elif role == "planner":
        files = plan_documents(cli, prompt)
        summary = "A Medium plan of %d tasks, by %s" % (len(PLAN_FILES), cli)
    elif role == "critic":
        path = expected_path(prompt) or "discussions/%s-critique.json" % safe(prompt.task)
        files = {path: json.dumps({
            "rating": 4,
            "risk": "low",
            "strengths": ["%s critic (%s): the document is concrete" % (MARK, cli)],
            "weaknesses": ["%s critic (%s): one example more would help" % (MARK, cli)],
            "suggestions": ["Name the test that proves each goal"],
            "missing": [],
        }, indent=2)}
        summary = "Critique of %s: rating 4, risk low" % prompt.task
    elif role == "reviewer":
        path = expected_path(prompt) or "artifacts/%s-agent-review.json" % safe(prompt.task)
        files = {path: json.dumps({
            "verdict": "APPROVE",
            "findings": [{"severity": "low", "file": "app/subtract.py", "line": 1,
                          "reason": "%s reviewer (%s): a docstring example would help" % (MARK, cli)}],
        }, indent=2)}
        summary = "Second review: APPROVE with one low finding"
    else:
        path = "artifacts/%s-report.md" % safe(prompt.task)
        files = {path: "# %s\n\n%s %s: nothing to report.\n" % (prompt.task, MARK, cli)}
        summary = "Report of %s" % prompt.task
    result = {
        "summary": summary,
        "state_update": {
            "key_findings": ["%s played the %s role" % (cli, role)],
            "decisions": ["Followed the %s instructions, because the prompt gave them" % role],
            "files_modified": sorted(files),
            "verification": "self-validated",
        },
        "files": files,
    }
    return "Here is the %s work.\n\n%s" % (role, block(result))


def expected_path(prompt):
    """The path at the start of the task's `Expected:` line, if it is one."""
    m = re.match(r"([A-Za-z0-9_./-]+\.(?:json|md))\b", prompt.expected or "")
    return m.group(1) if m else None


def discovery_context(cli, prompt):
    request = field(r"^## The request\n\n`{3,}text\n(.*?)\n`{3,}$", prompt.text) or "the request"
    return json.dumps({
        "session_id": prompt.session,
        "phase": 1,
        "task_text": request,
        "codebase_context": {
            "file_count": 4,
            "languages": [{"name": "Python", "files": 4, "bytes": 200, "share": 1.0}],
            "frameworks": [],
            "manifests": [],
            "layout": {"source_dirs": ["app"], "test_dirs": ["tests"], "top_level_dirs": ["app", "tests"],
                       "entry_points": [], "ci": [], "docs": []},
            "test_framework": {"name": "unittest", "command": "python -m unittest",
                               "evidence": "tests/test_calc.py"},
        },
        "seed_analysis": {
            "problem_statement": request,
            "target_users": ["developers using app.calc"],
            "domain": "arithmetic helpers",
            "constraints": ["keep the standard library only"],
            "exploration_dimensions": ["patterns", "testing"],
        },
        "open_questions": ["Should subtract accept floats as well as integers?"],
        "recommendations": ["%s analyst (%s): verify with python -m unittest" % (MARK, cli)],
        "tech_profile": {"signals": [], "evidence": {}, "confidence": "medium"},
    }, indent=2)


def plan_documents(cli, prompt):
    tasks = []
    files = {}
    for tid, title, path, _ in PLAN_FILES:
        task = {
            "id": tid,
            "title": title,
            "files": [{"path": path, "change": "create"}],
            "depends_on": [],
            "convergence": {"criteria": ["%s exists and python -m unittest passes" % path]},
        }
        tasks.append(task)
        detail = dict(task)
        detail.update({
            "description": "%s (%s, %s)" % (title, MARK, cli),
            "implementation": ["Create %s" % path],
            "risks": ["none beyond a typo"],
        })
        files["plan/.task/%s.json" % tid] = json.dumps(detail, indent=2)
    plan = {
        "session_id": prompt.session,
        "summary": "%s planner (%s): add subtract and its test" % (MARK, cli),
        "complexity": "Medium",
        "complexity_reasons": ["two files in two modules (app, tests)"],
        "approach": "One task per file; they touch different files and run in parallel",
        "tasks": tasks,
        "recommended_execution": "parallel",
        "test_command": "python -m unittest",
    }
    files["plan/plan.json"] = json.dumps(plan, indent=2)
    return files


# What each writer phase writes: (part of the template, path, id, title).
PHASE_FILES = {
    "product-brief": [("brief", "spec/product-brief.md", "G-001", "Subtract function")],
    "requirements": [
        ("index", "spec/requirements/_index.md", None, "Subtract function"),
        ("functional", "spec/requirements/REQ-001-subtract-two-numbers.md", "REQ-001",
         "Subtract two numbers"),
        ("non-functional", "spec/requirements/NFR-P-001-constant-time.md", "NFR-P-001",
         "Constant time"),
    ],
    "architecture": [
        ("index", "spec/architecture/_index.md", None, "Subtract function"),
        ("adr", "spec/architecture/ADR-001-a-module-of-its-own.md", "ADR-001",
         "A module of its own"),
    ],
    "epics": [
        ("index", "spec/epics/_index.md", None, "Subtract function"),
        ("epic", "spec/epics/EPIC-001-subtract.md", "EPIC-001", "Subtract"),
    ],
}

# Short values, by placeholder name (frontmatter, headings, table cells).
SHORT = {
    "version": "1", "dependencies": "[]", "priority": "Must", "traces_to": "[G-001]",
    "category": "performance", "status": "Accepted", "date": "2026-01-01", "mvp": "true",
    "size": "S", "component": "COMP-001", "requirements": "[REQ-001]",
    "architecture": "[COMP-001]", "generated_at": "2026-01-01T00:00:00Z",
    "metric": "time per call", "target": "under 1 ms", "method": "a unittest timing loop",
    "style": "a module of plain functions", "role": "Developer", "name": "Developer",
    "traces": "REQ-001, NFR-P-001",
}

# Table rows, by placeholder name (or phase and name), as lists of cells (padded or cut to
# the table's width).
ROWS = {
    "goal_rows": ["G-001", "Offer subtract(a, b)", "Must", "tests passing", "100%"],
    "state_rows": ["subtraction", "written by hand", "app.subtract.subtract", "one tested helper"],
    "moscow_rows": ["Must", "1", "1"],
    "functional_rows": ["REQ-001", "Subtract two numbers", "Must", "G-001"],
    "non_functional_rows": ["NFR-P-001", "performance", "Constant time", "Should", "under 1 ms"],
    "traceability_rows": ["G-001", "REQ-001", "NFR-P-001"],
    "component_rows": ["COMP-001", "app.subtract", "computes a - b", "Python", "none",
                       "REQ-001, NFR-P-001"],
    "adr_rows": ["ADR-001", "A module of its own", "Accepted", "REQ-001"],
    "alternative_rows": ["A module of its own (chosen)", "small and testable", "one more file"],
    "quality_rows": ["NFR-P-001", "under 1 ms", "a unittest timing loop", "REQ-001"],
    "risk_rows": ["a wrong sign", "Low", "Low", "a unit test of subtract(5, 3)"],
    "epic_rows": ["EPIC-001", "Subtract", "Must", "true", "1", "S"],
    "estimation_rows": ["S", "under a day", "EPIC-001"],
    ("epics", "traceability_rows"): ["REQ-001", "EPIC-001", "STORY-001-001", "COMP-001"],
    ("epics", "risk_rows"): ["a wrong sign", "EPIC-001", "a unit test of subtract(5, 3)"],
}


def paragraph(name, cli, ident):
    """Text for a placeholder that stands alone on its line."""
    if name == "acceptance_criteria":
        return ("- [ ] subtract(5, 3) returns 2 (REQ-001)\n"
                "- [ ] subtract(-1, 1) returns -2 (REQ-001)\n"
                "- [ ] the unittest suite passes with the new test")
    if name in ("open_questions",):
        return "- Should subtract accept floats as well as integers? (%s, %s)" % (MARK, cli)
    if name == "revision_notes":
        return ""
    return ("%s (%s, %s): %s covers subtraction for developers of app.calc; it traces G-001 "
            "through REQ-001 and NFR-P-001 to COMP-001, decided in ADR-001 and delivered by "
            "EPIC-001 with STORY-001-001, each checked by a unit test."
            % (name.replace("_", " ").capitalize(), MARK, cli, ident or "The change"))


def fill(body, parts, cli, prompt, ident, title):
    """`body` with every {{placeholder}} replaced."""
    lines = body.split("\n")
    out = []
    header = None
    for line in lines:
        if line.startswith("|") and not line.startswith("|---") and "{{" not in line:
            header = line
        m = re.fullmatch(r"\s*\{\{(\w+)\}\}\s*", line)
        if m:
            name = m.group(1)
            row = ROWS.get((prompt.phase, name)) or ROWS.get(name)
            if row:
                width = header.count("|") - 1 if header else len(row)
                cells = (row + ["-"] * width)[:width]
                out.append("| " + " | ".join(cells) + " |")
            elif name == "users" and "persona" in parts:
                out.append(fill(parts["persona"], parts, cli, prompt, "Developer", title).strip())
            elif name == "stories" and "story" in parts:
                out.append(fill(parts["story"], parts, cli, prompt, "STORY-001-001",
                                "Subtract two numbers").strip())
            else:
                out.append(paragraph(name, cli, ident))
            continue

        def short(mm):
            name = mm.group(1)
            if name == "id":
                return ident or "G-001"
            if name == "title":
                return title
            if name == "session_id":
                return prompt.session or "session"
            if name in SHORT:
                return SHORT[name]
            if name == "user_story":
                return "As a developer, I want subtract(a, b), so that I stop writing a - b by hand."
            return "%s of %s (%s)" % (name.replace("_", " "), title, MARK)

        out.append(re.sub(r"\{\{(\w+)\}\}", short, line))
    return "\n".join(out).rstrip("\n") + "\n"


def write_documents(cli, prompt):
    template = prompt.template() or ""
    template = re.sub(r"\A\s*<!--.*?-->\s*", "", template, count=1, flags=re.S)
    parts = {}
    for m in re.finditer(r"<!-- part: ([\w-]+) -->\n(.*?)(?=<!-- part: |\Z)", template, re.S):
        parts[m.group(1)] = m.group(2)
    if not parts:
        parts = {"brief": template}
    files = {}
    for part, path, ident, title in PHASE_FILES.get(prompt.phase, []):
        body = parts.get(part) or next(iter(parts.values()))
        files[path] = fill(body, parts, cli, prompt, ident, title)
    if not files:
        files["spec/%s.md" % (prompt.phase or "document")] = "# %s\n\n%s (%s)\n" % (
            prompt.phase, MARK, cli)
    return files
