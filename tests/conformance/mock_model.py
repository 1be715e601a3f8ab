#!/usr/bin/env python3
"""A scripted model server for the real-CLI conformance test (tests/conformance/run.sh).

Serves, on 127.0.0.1 only:
  POST /v1/messages   Anthropic Messages API, streamed (SSE) or not   -> Claude Code
  POST /v1/responses  OpenAI Responses API, streamed (SSE)             -> Codex
  POST /v1beta/models/{model}:streamGenerateContent (SSE), :generateContent, :countTokens
                      Gemini API                                       -> Gemini CLI
  POST /v1/chat/completions  OpenAI Chat Completions, streamed or not  -> Qwen Code, OpenCode,
                      Aider (told apart by what they send: Qwen offers `write_file` or `read_file`, OpenCode
                      `write` or `read`, Aider no tools and its edit-format system prompt)
  HEAD /              404 (Claude Code probes it)

Every conversation is decided from the request alone (the server keeps no state), by the
role git-tlv4's prompt names (play.py says what each role answers):
  - a document role (analyst, writer, planner, critic, reviewer): at once the final answer,
    its documents in the result block's `files`;
  - the executor: one tool call per file to write (`conformance-<cli>-<TASK>.txt`, or the
    files of the plan tasks its description names), in the CLI's dialect (Claude: `Write`,
    Gemini and Qwen: `write_file`, OpenCode: `write`, each with an absolute path taken from
    the system prompt or the first user message; Codex: the freeform `apply_patch` tool when
    offered, else `exec_command`), then — when git-tlv4's prompt says it has a shell and
    the CLI offers a shell tool (Claude `Bash`, Codex `exec_command`, Gemini and Qwen
    `run_shell_command`, OpenCode `bash`) — one command (play.shell_command), then the
    final answer ending with the result block.
Aider calls no tools: its one coder request gets the files as SEARCH/REPLACE blocks (the
format git-tlv4's preset asks for), or as "whole" file listings when its system prompt
asks for that, and the result block in the same answer. Requests that offer no tools
(titles, quota probes, Aider's history summaries) get a short text, or a small JSON object
when they ask for JSON (as Gemini's model router does when run without -m).

Usage: mock_model.py [PORT] [--log FILE] [--port-file FILE] [--fail-first N [--fail-how 500|drop]]
                     [--contract once|always]
--fail-first fails the first N turns of the agent (requests offering tools, or Aider's
coder request), not its titles, router calls or summaries. --contract makes the executor's
final answer break the result contract: on its first answer (once) or on every one (always).
Prints the port it listens on (PORT 0 or none: any free port) as its first line.
Every request and reply is appended to the log as JSON lines.
"""

import argparse
import http.server
import json
import os
import re
import socketserver
import sys
import threading
import time

import play

LOCK = threading.Lock()
LOG_PATH = None
COUNTER = [0]
# How many turns still fail before the script (--fail-first).
FAILURES_LEFT = [0]
# How they fail: "500" (an HTTP error) or "drop" (a stream cut short).
FAIL_HOW = ["500"]
# Which executor answers break the result contract (--contract): "", "once" or "always".
CONTRACT = [""]


def log(kind, **fields):
    entry = {"t": round(time.time(), 3), "kind": kind}
    entry.update(fields)
    line = json.dumps(entry, ensure_ascii=False)
    with LOCK:
        if LOG_PATH:
            with open(LOG_PATH, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        else:
            sys.stderr.write(line + "\n")


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return "%s%06d" % (prefix, COUNTER[0])


# --- what the conversation is about -------------------------------------------------------


def texts(value):
    """Every string found in a JSON value (message contents, system blocks, …)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from texts(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in ("text", "content", "input", "output") or isinstance(v, (list, dict)):
                yield from texts(v)


def decide(cli, prompt_texts, done, last_output, shell_tool=False):
    """What the agent does next: ("write", path, content) for a file its tool is to write,
    ("shell", command) for a command its shell tool is to run (once the files are written,
    when the prompt says it has a shell and `shell_tool` says its CLI offers one), or
    ("final", text). `done`: how many tool results the conversation holds."""
    prompt = play.Prompt("\n".join(texts(prompt_texts)))
    if prompt.role and prompt.role != "executor":
        return ("final", play.document_answer(cli, prompt)), prompt
    files = play.executor_files(cli, prompt)
    if done < len(files):
        return ("write",) + files[done], prompt
    if prompt.shell and shell_tool and done == len(files):
        return ("shell", play.shell_command(prompt)), prompt
    if play.breaks_contract(CONTRACT[0], prompt):
        return ("final", play.out_of_contract(cli, prompt)), prompt
    return ("final", play.executor_final(cli, prompt, files, last_output)), prompt


CWD_PATTERNS = [
    r"Primary working directory:\s*(/\S+)",
    r"Working directory:\s*(/\S+)",
    r"<cwd>\s*(/[^<\s]+)\s*</cwd>",
    r"\bcwd:\s*(/\S+)",
    # Qwen Code (and older Gemini CLIs): "I'm currently working in the directory: /…"
    r"working in the directory:?\s*[`'\"]?(/[^\s`'\"]+)",
    # Gemini CLI 0.61: "- **Workspace Directories:**\n  - /…"
    r"Workspace Directories:\**\s*\n\s*-\s*(/\S+)",
    r"current working directory[^/\n]{0,40}?(/[^\s`'\"]+)",
]


def agent_cwd(*sources):
    """The working directory an agent states in its system prompt or first message."""
    for pat in CWD_PATTERNS:
        for src in sources:
            for t in texts(src):
                m = re.search(pat, t)
                if m:
                    return m.group(1).rstrip(".,;:`'\"")
    return None


def claude_cwd(body):
    """The working directory Claude Code states in its system prompt."""
    return agent_cwd(body.get("system"), body.get("messages"))


# A small JSON object for utility requests that ask for JSON: it fits Gemini's and Qwen's
# model router ({reasoning, model_choice}) and next-speaker check ({reasoning, next_speaker}).
UTILITY_JSON = {"reasoning": "mock: a scripted conformance run", "next_speaker": "user",
                "model_choice": "flash", "complexity_score": 1}


# --- HTTP ---------------------------------------------------------------------------------


def aider_system(messages):
    """The system prompt of Aider's coder ("whole" or SEARCH/REPLACE format), or None."""
    system = "\n".join(texts([m for m in messages if isinstance(m, dict)
                              and m.get("role") == "system"]))
    return system if "*file listing*" in system or "SEARCH/REPLACE" in system else None


def is_turn(path, body):
    """Whether a request is a turn of the agent (the ones --fail-first fails): a model
    request that offers tools, or Aider's coder request; not titles, routers, summaries."""
    if not path.endswith(("/messages", "/responses", ":streamGenerateContent",
                          "/chat/completions")):
        return False
    return bool(body.get("tools")) or (
        path.endswith("/chat/completions") and aider_system(body.get("messages") or []) is not None)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tlv4-mock/1"

    def log_message(self, fmt, *args):  # keep stderr quiet; everything goes to the log
        pass

    def reply_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        log("reply", path=self.path, status=status, body=obj)

    def reply_sse(self, events, done=False):
        """`events`: (event name or None, JSON object) pairs; `done`: end with `data: [DONE]`."""
        chunks = []
        for name, obj in events:
            head = "event: %s\n" % name if name else ""
            chunks.append("%sdata: %s\n\n" % (head, json.dumps(obj)))
        if done:
            chunks.append("data: [DONE]\n\n")
        data = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        log("reply", path=self.path, status=200, sse=[o for _, o in events])

    def do_HEAD(self):
        log("request", method="HEAD", path=self.path)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        log("request", method="GET", path=self.path, headers=dict(self.headers))
        self.reply_json(404, {"error": {"type": "not_found", "message": "mock: no " + self.path}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw[:2000].decode("utf-8", "replace")}
        log("request", method="POST", path=self.path, headers=dict(self.headers), body=body)
        path = self.path.split("?", 1)[0].rstrip("/")
        with LOCK:
            flaky = FAILURES_LEFT[0] > 0 and is_turn(path, body)
            if flaky:
                FAILURES_LEFT[0] -= 1
        if flaky and FAIL_HOW[0] == "drop":
            # A stream cut short: the headers and a first event, then the connection closes.
            log("reply", path=self.path, status=200, dropped=True)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            if path.endswith("/chat/completions"):
                first = {"id": "chatcmpl-0", "object": "chat.completion.chunk", "created": 0,
                         "model": body.get("model") or "mock",
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                      "finish_reason": None}]}
            elif ":" in path.rsplit("/", 1)[-1]:
                first = {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                                         "index": 0}]}
            else:
                first = {"type": "response.created", "response": {"id": "r0"}}
            self.wfile.write(b"data: " + json.dumps(first).encode() + b"\n\n")
            self.wfile.flush()
            self.close_connection = True
            return
        if flaky:
            self.reply_json(500, {"type": "error", "error": {
                "type": "api_error", "message": "mock: a passing failure (--fail-first)"}})
            return
        try:
            if path.endswith("/messages/count_tokens"):
                self.reply_json(200, {"input_tokens": 100})
            elif path.endswith("/messages"):
                self.anthropic(body)
            elif path.endswith("/responses"):
                self.openai_responses(body)
            elif path.endswith(":countTokens"):
                self.reply_json(200, {"totalTokens": 100})
            elif path.endswith(":streamGenerateContent"):
                self.gemini(path, body, stream=True)
            elif path.endswith(":generateContent"):
                self.gemini(path, body, stream=False)
            elif path.endswith("/chat/completions"):
                self.chat_completions(body)
            else:
                self.reply_json(404, {"error": {"type": "not_found", "message": "mock: no " + path}})
        except Exception as e:  # a bug here must show in the log, not hang the CLI
            log("error", path=self.path, error=repr(e))
            self.reply_json(500, {"error": {"type": "api_error", "message": "mock: " + repr(e)}})

    # --- Anthropic Messages (Claude Code) ---------------------------------------------------

    def anthropic(self, body):
        model = body.get("model") or "mock"
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        results = [
            b for m in users for b in (m.get("content") if isinstance(m.get("content"), list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        tool_names = [t.get("name") for t in tools if isinstance(t, dict)]
        out = ""
        if results:
            out = results[-1].get("content")
            out = " ".join(texts(out)) if not isinstance(out, str) else out
            if results[-1].get("is_error"):
                out = "ERROR: " + out
        step, prompt = decide("claude", [m.get("content") for m in users], len(results), out,
                              "Bash" in tool_names)
        if not tools:
            block = {"type": "text", "text": "Conformance run"}
            stop = "end_turn"
        elif step[0] == "final":
            block = {"type": "text", "text": step[1]}
            stop = "end_turn"
        elif step[0] == "shell":
            block = {"type": "tool_use", "id": next_id("toolu_"), "name": "Bash",
                     "input": {"command": step[1], "description": "Run the tests"}}
            stop = "tool_use"
        elif "Write" in tool_names:
            cwd = claude_cwd(body)
            if not cwd:
                raise RuntimeError("no working directory found in Claude's system prompt")
            args = {"file_path": os.path.join(cwd, step[1]), "content": step[2]}
            block = {"type": "tool_use", "id": next_id("toolu_"), "name": "Write", "input": args}
            stop = "tool_use"
        else:
            raise RuntimeError("Claude offered no Write tool: %s" % tool_names)
        log("script", cli="claude", task=prompt.task, role=prompt.role, step=stop, block=block)

        usage = {"input_tokens": 100, "output_tokens": 20}
        msg_id = next_id("msg_")
        if not body.get("stream"):
            self.reply_json(200, {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage,
            })
            return
        start_block = dict(block)
        if block["type"] == "tool_use":
            start_block["input"] = {}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start_block["text"] = ""
            delta = {"type": "text_delta", "text": block["text"]}
        self.reply_sse([
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": start_block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 20}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    # --- OpenAI Responses (Codex) -----------------------------------------------------------

    def openai_responses(self, body):
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        tools = body.get("tools") or []
        prompt_items = [i for i in items if isinstance(i, dict) and i.get("role") == "user"]
        outputs = [
            i for i in items
            if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output")
        ]
        names = [t.get("name") for t in tools if isinstance(t, dict)]
        out = ""
        if outputs:
            out = outputs[-1].get("output")
            out = out if isinstance(out, str) else json.dumps(out)
        step, prompt = decide("codex", [i.get("content") for i in prompt_items], len(outputs), out,
                              "exec_command" in names or "shell" in names)
        task = prompt.task
        if not tools:
            item = {"type": "message", "role": "assistant", "id": next_id("msg_"),
                    "content": [{"type": "output_text", "text": "Conformance run"}]}
        elif step[0] == "final":
            item = {"type": "message", "role": "assistant", "id": next_id("msg_"),
                    "content": [{"type": "output_text", "text": step[1]}]}
        elif step[0] == "shell":
            tool = "exec_command" if "exec_command" in names else "shell"
            args = ({"cmd": step[1]} if tool == "exec_command"
                    else {"command": ["bash", "-lc", step[1]]})
            item = {"type": "function_call", "id": next_id("fc_"), "status": "completed",
                    "name": tool, "call_id": next_id("call_"), "arguments": json.dumps(args)}
        elif "apply_patch" in names:
            name, text = step[1], step[2]
            added = "".join("+" + line + "\n" for line in text.rstrip("\n").split("\n"))
            patch = "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (name, added)
            item = {"type": "custom_tool_call", "id": next_id("ctc_"), "status": "completed",
                    "name": "apply_patch", "call_id": next_id("call_"), "input": patch}
        elif "exec_command" in names or "shell" in names:
            name, text = step[1], step[2].replace("'", "")
            cmd = "printf '%%s' '%s' > %s" % (text, name)
            tool = "exec_command" if "exec_command" in names else "shell"
            args = {"cmd": cmd} if tool == "exec_command" else {"command": ["bash", "-lc", cmd]}
            item = {"type": "function_call", "id": next_id("fc_"), "status": "completed",
                    "name": tool, "call_id": next_id("call_"), "arguments": json.dumps(args)}
        else:
            raise RuntimeError("Codex offered neither apply_patch nor exec_command: %s" % names)
        log("script", cli="codex", task=task, role=prompt.role, item=item)
        rid = next_id("resp_")
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 120}
        self.reply_sse([
            ("response.created", {"type": "response.created",
                                  "response": {"id": rid, "status": "in_progress"}}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": rid, "status": "completed",
                                                 "usage": usage}}),
        ])

    # --- Gemini API (Gemini CLI) ------------------------------------------------------------

    def gemini(self, path, body, stream):
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        contents = body.get("contents") or []
        names = [
            d.get("name")
            for t in body.get("tools") or [] if isinstance(t, dict)
            for d in (t.get("functionDeclarations") or t.get("function_declarations") or [])
            if isinstance(d, dict)
        ]
        gen = body.get("generationConfig") or {}
        wants_json = gen.get("responseMimeType") == "application/json" or any(
            k in gen for k in ("responseSchema", "responseJsonSchema"))
        answers = [
            p["functionResponse"] for c in contents if isinstance(c, dict)
            for p in c.get("parts") or []
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
        ]
        out = ""
        if answers:
            out = answers[-1].get("response")
            out = out if isinstance(out, str) else " ".join(texts(out)) or json.dumps(out)
        users = [c for c in contents if isinstance(c, dict) and c.get("role") == "user"]
        step, prompt = decide("gemini", users, len(answers), out, "run_shell_command" in names)
        if wants_json:
            part = {"text": json.dumps(UTILITY_JSON)}
        elif not names:
            part = {"text": "Conformance run"}
        elif step[0] == "final":
            part = {"text": step[1]}
        elif step[0] == "shell":
            part = {"functionCall": {"name": "run_shell_command", "args": {"command": step[1]}}}
        elif "write_file" in names:
            cwd = agent_cwd(body.get("systemInstruction"), contents)
            if not cwd:
                raise RuntimeError("no working directory found in Gemini's request")
            part = {"functionCall": {"name": "write_file", "args": {
                "file_path": os.path.join(cwd, step[1]), "content": step[2]}}}
        else:
            raise RuntimeError("Gemini offered no write_file tool: %s" % names)
        log("script", cli="gemini", task=prompt.task, role=prompt.role, part=part)
        reply = {
            "candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20,
                              "totalTokenCount": 120},
            "modelVersion": model,
        }
        if stream:
            self.reply_sse([(None, reply)])
        else:
            self.reply_json(200, reply)

    # --- OpenAI Chat Completions (Qwen Code, OpenCode, Aider) -------------------------------

    def chat_completions(self, body):
        model = body.get("model") or "mock"
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        names = [
            (t.get("function") or {}).get("name")
            for t in body.get("tools") or [] if isinstance(t, dict)
        ]
        fmt = body.get("response_format") or {}
        wants_json = isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")
        users = [m for m in messages if m.get("role") == "user"]
        system = aider_system(messages)
        tool_msgs = [m for m in messages if m.get("role") == "tool"]
        out = ""
        if tool_msgs:
            out = tool_msgs[-1].get("content")
            out = out if isinstance(out, str) else " ".join(texts(out))
        content, call = None, None
        # Qwen's tools are snake_case (`write_file`, `read_file`), OpenCode's single words
        # (`write`, `read`); a document task is offered no write tool at all.
        if {"write_file", "read_file", "list_directory"} & set(names):
            cli, tool, path_key = "qwen", "write_file", "file_path"
        elif {"write", "read"} & set(names):
            cli, tool, path_key = "opencode", "write", "filePath"
        elif system:
            cli, tool, path_key = "aider", None, None
        else:
            cli, tool, path_key = "chat", None, None
        shell_tool = {"qwen": "run_shell_command", "opencode": "bash"}.get(cli)
        step, prompt = decide(cli, [m.get("content") for m in users], len(tool_msgs), out,
                              shell_tool in names)
        if cli == "aider":
            content = self.aider_answer(prompt, system)
        elif wants_json:
            content = json.dumps(UTILITY_JSON)
        elif cli == "chat":
            content = "Conformance run"
        elif step[0] == "final":
            content = step[1]
        elif step[0] == "shell":
            args = {"command": step[1]}
            if cli == "opencode":
                args["description"] = "Run the tests"
            call = {"id": next_id("call_"), "type": "function",
                    "function": {"name": shell_tool, "arguments": json.dumps(args)}}
            tool = shell_tool
        elif tool not in names:
            raise RuntimeError("%s offered no %s tool: %s" % (cli, tool, names))
        else:
            cwd = agent_cwd([m for m in messages if m.get("role") in ("system", "user")])
            if not cwd:
                raise RuntimeError("no working directory found in %s's request" % cli)
            args = {path_key: os.path.join(cwd, step[1]), "content": step[2]}
            call = {"id": next_id("call_"), "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(args)}}
        log("script", cli=cli, task=prompt.task, role=prompt.role, content=content, tool_call=call)

        cid = next_id("chatcmpl-")
        created = int(time.time())
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        finish = "tool_calls" if call else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": content}
            if call:
                message["tool_calls"] = [call]
            self.reply_json(200, {
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            })
            return

        def chunk(delta, finish_reason=None, **extra):
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created,
                   "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            obj.update(extra)
            return (None, obj)

        events = [chunk({"role": "assistant", "content": ""})]
        if call:
            events.append(chunk({"tool_calls": [{
                "index": 0, "id": call["id"], "type": "function",
                "function": {"name": tool, "arguments": ""}}]}))
            events.append(chunk({"tool_calls": [{
                "index": 0, "function": {"arguments": call["function"]["arguments"]}}]}))
        else:
            events.append(chunk({"content": content}))
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append((None, {"id": cid, "object": "chat.completion.chunk",
                                  "created": created, "model": model, "choices": [],
                                  "usage": usage}))
        self.reply_sse(events, done=True)

    def aider_answer(self, prompt, system):
        """Aider's one answer: a document role's answer as it is; an executor's files in
        Aider's edit format, then the result block."""
        if prompt.role and prompt.role != "executor":
            return play.document_answer("aider", prompt)
        files = play.executor_files("aider", prompt)
        edits = []
        for name, text in files:
            if "SEARCH/REPLACE" in system and "*file listing*" not in system:
                # A SEARCH/REPLACE block with an empty SEARCH part creates the file.
                edits.append("%s\n```\n<<<<<<< SEARCH\n=======\n%s>>>>>>> REPLACE\n```\n"
                             % (name, text))
            else:
                edits.append("%s\n```\n%s```\n" % (name, text))
        if play.breaks_contract(CONTRACT[0], prompt):
            final = play.out_of_contract("aider", prompt)
        else:
            final = play.executor_final("aider", prompt, files, "Aider applies the edit")
        return "I will create %s.\n\n%s\n%s" % (
            ", ".join("`%s`" % n for n, _ in files), "\n".join(edits), final.split("\n\n", 1)[1])


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global LOG_PATH
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("port", nargs="?", type=int, default=0)
    ap.add_argument("--log", help="append requests and replies here (JSON lines)")
    ap.add_argument("--port-file", help="also write the port here once listening")
    ap.add_argument("--fail-first", type=int, default=0, metavar="N",
                    help="fail the first N turns of the agent (CLIs retry them)")
    ap.add_argument("--fail-how", choices=["500", "drop"], default="500",
                    help="how --fail-first fails: an HTTP 500, or a stream cut short")
    ap.add_argument("--contract", choices=["once", "always"], default="",
                    help="an executor's final answer breaks the result contract on its first "
                    "answer (once) or on every answer (always)")
    a = ap.parse_args()
    CONTRACT[0] = a.contract
    LOG_PATH = a.log
    FAIL_HOW[0] = a.fail_how
    FAILURES_LEFT[0] = a.fail_first
    srv = Server(("127.0.0.1", a.port), Handler)
    port = srv.server_address[1]
    print(port, flush=True)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as fh:
            fh.write("%d\n" % port)
        os.replace(tmp, a.port_file)
    log("listening", port=port)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
