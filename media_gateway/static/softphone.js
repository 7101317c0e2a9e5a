// Baton web softphone: a call over the gateway's browser protocol (see media_gateway/serializers.py).
// Plain modern JS, no build step and no external resources: the gateway serves this file as is.
"use strict";

(() => {
  const { WIRE_RATE } = window.BatonAudio; // the gateway speaks PCM16 mono 16 kHz only
  const PING_MS = 15000; // keeps idle proxies from closing a quiet call

  const byTestId = (id) => document.querySelector(`[data-testid="${id}"]`);
  const ui = {
    status: byTestId("status"),
    agent: byTestId("active-agent"),
    visited: byTestId("visited"),
    speaking: byTestId("speaking"),
    scenario: byTestId("scenario"),
    call: byTestId("call-button"),
    hangup: byTestId("hangup-button"),
    keypad: byTestId("keypad"),
    timeline: byTestId("timeline"),
  };

  const stats = {
    framesSent: 0,
    audioFramesReceived: 0,
    audioMsReceived: 0,
    clears: 0,
    sourcesStopped: 0, // scheduled chunks cut short by a clear: audio really was interrupted
    bargeIns: 0,
    timelineUpdates: 0,
  };
  const eventCounts = {};
  let phase = "idle"; // idle | connecting | in-call
  let callId = null;
  let activeAgent = null;
  let ws = null;
  let media = null; // { ctx, stream, close, player } while a call holds the microphone
  let pingTimer = null;
  let rendered = 0; // timeline items already in the list (the transcript only grows)

  // --- status and controls ----------------------------------------------------------------

  function setStatus(text) {
    ui.status.textContent = text;
  }

  function setPhase(next) {
    phase = next;
    ui.call.disabled = next !== "idle";
    ui.hangup.disabled = next === "idle";
    ui.scenario.disabled = next !== "idle";
    for (const key of ui.keypad.querySelectorAll("button")) key.disabled = next !== "in-call";
    document.body.dataset.phase = next;
  }

  // --- microphone -------------------------------------------------------------------------

  async function openMicrophone(ctx) {
    const opened = await window.BatonAudio.openMicrophone(ctx, (frame) => {
      // Audio is sent only once the stream is started; earlier frames are simply dropped.
      if (phase === "in-call" && ws && ws.readyState === WebSocket.OPEN) {
        ws.send(frame);
        stats.framesSent++;
      }
    });
    return { ...opened, player: window.BatonAudio.createPlayer(ctx) };
  }

  // --- playback ---------------------------------------------------------------------------

  function play(data) {
    if (!media) return;
    const ms = media.player.play(data);
    if (ms === 0) return;
    stats.audioFramesReceived++;
    stats.audioMsReceived += ms;
  }

  function stopPlayback() {
    if (media) stats.sourcesStopped += media.player.stop();
  }

  // --- timeline ---------------------------------------------------------------------------

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text; // never innerHTML: transcripts are untrusted
    return node;
  }

  function field(name, text) {
    const node = element("span", `item__${name}`, text);
    node.dataset.field = name;
    return node;
  }

  function describe(item) {
    switch (item.type) {
      case "user_turn":
        return ["You", [field("text", item.text || "(nothing recognized)")]];
      case "agent_turn":
      case "greeting": {
        const who = item.type === "greeting" && item.is_return ? `${item.agent} (welcome back)` : item.agent;
        if (item.interrupted) {
          return [who, [field("text", `${item.heard_text || ""}…`), field("note", " (interrupted)")]];
        }
        return [who, [field("text", item.text)]];
      }
      case "tool_call":
        return [item.agent, [field("text", `uses ${item.tool}`), field("detail", item.arguments || "")]];
      case "tool_result":
        return [item.tool, [field("detail", clip(item.content || "", 240))]];
      case "handoff": {
        const parts = [
          field("route", `${item.source} → ${item.target || "?"}`),
          field("handoff-type", item.handoff_type || ""),
          field("reason", item.reason || ""),
        ];
        if (item.trigger === "supervisor") parts.push(field("note", "by supervisor"));
        if (!item.success) parts.push(field("error", `failed: ${item.error || "refused"}`));
        return ["Handoff", parts];
      }
      case "barge_in":
        return [
          "You interrupted",
          [
            field("heard", `${item.agent} had said: “${item.heard_text}”`),
            field("detail", `of “${item.interrupted_text}”`),
          ],
        ];
      case "backchannel":
        // Said over a reply that carried on ("mm-hmm", "okay"): listening, not a turn.
        return ["You (listening)", [field("text", item.text ? `“${item.text}”` : "…")]];
      case "supervisor_action":
        return [
          `Supervisor ${item.supervisor || ""}`.trim(),
          [field("text", [item.action, item.target, item.reason].filter(Boolean).join(" · "))],
        ];
      case "dtmf":
        return ["Keypad", [field("text", item.digits)]];
      case "transfer": {
        const to = item.target_label || "a person";
        if (item.outcome === "taken" || item.outcome === "connected") {
          const who = item.taken_by ? ` (${item.taken_by})` : "";
          return ["Transfer", [field("text", `You are now speaking with ${to}${who}.`)]];
        }
        return ["Transfer", [field("text", `Not transferred to ${to}: ${item.outcome}`)]];
      }
      case "call_end":
        return ["Call ended", [field("text", [item.status, item.reason].filter(Boolean).join(": "))]];
      default:
        return [item.type || "event", [field("detail", clip(JSON.stringify(item), 240))]];
    }
  }

  function clip(text, limit) {
    return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
  }

  function renderItem(item) {
    const li = element("li", `item item--${item.type}`);
    li.dataset.type = item.type;
    li.dataset.testid = "timeline-item";
    const [who, parts] = describe(item);
    const head = element("div", "item__head");
    head.append(element("span", "item__who", who));
    const at = item.at ? new Date(item.at) : null;
    if (at && !Number.isNaN(at.getTime())) {
      const time = element("time", "item__time", at.toLocaleTimeString());
      time.dateTime = at.toISOString();
      head.append(time);
    }
    const body = element("div", "item__body");
    body.append(...parts);
    li.append(head, body);
    return li;
  }

  // The gateway sends the items from index `start` on: the page keeps those before it and
  // replaces the rest (a refresh that overlaps the previous one, or a new run of the call).
  function showTimeline(state, items, start) {
    stats.timelineUpdates++;
    while (rendered > start && ui.timeline.lastElementChild) {
      ui.timeline.lastElementChild.remove();
      rendered--;
    }
    for (const item of items) ui.timeline.append(renderItem(item));
    rendered += items.length;
    const last = ui.timeline.lastElementChild;
    if (last) last.scrollIntoView({ block: "nearest" });
    if (state && state.active_agent) showAgent(state.active_agent);
    if (state && Array.isArray(state.visited)) ui.visited.textContent = state.visited.join(" → ");
  }

  function showAgent(name) {
    if (name === activeAgent) return;
    if (activeAgent) setStatus(`Transferred to ${name}.`);
    activeAgent = name;
    ui.agent.textContent = name;
  }

  // --- the call ---------------------------------------------------------------------------

  function onMessage(event) {
    if (typeof event.data !== "string") {
      play(event.data);
      return;
    }
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return; // one bad control message costs that message only
    }
    eventCounts[message.type] = (eventCounts[message.type] || 0) + 1;
    switch (message.type) {
      case "clear":
        stats.clears++;
        stopPlayback(); // barge-in: the caller talks, the agent stops now
        break;
      case "speaking":
        // The timeline catches up when the turn ends; whoever speaks now is who the caller
        // is talking to, so a handoff shows the moment the new agent starts its greeting.
        showAgent(message.agent);
        ui.speaking.textContent = `${message.agent}: “${message.text}”`;
        break;
      case "timeline":
        showTimeline(message.state, message.items || [], message.start || 0);
        break;
      case "barge_in":
        stats.bargeIns++;
        setStatus(`You interrupted after ${Math.round(message.played_ms || 0)} ms of reply.`);
        break;
      case "utterance":
        setStatus(`Heard you (${((message.ms || 0) / 1000).toFixed(1)} s); thinking…`);
        break;
      case "ended":
        setStatus(`Call ended (${message.status}).`);
        break;
      default:
        break; // pong and anything newer than this page
    }
  }

  async function startCall() {
    if (phase !== "idle") return;
    setPhase("connecting");
    setStatus("Starting the call…");
    // The previous call's timeline stays readable until the next call starts.
    activeAgent = null;
    ui.agent.textContent = "—";
    ui.visited.textContent = "";
    ui.timeline.replaceChildren();
    rendered = 0;
    // Created inside the click so the browser lets it play sound.
    const ctx = new AudioContext({ latencyHint: "interactive" });
    try {
      const scenario = ui.scenario.value.trim();
      const headers = { "Content-Type": "application/json" };
      // An operator opens the page as …/#key=OPERATOR_KEY when the gateway requires one; the
      // fragment never leaves the browser except in this header.
      const key = new URLSearchParams(location.hash.slice(1)).get("key");
      if (key) headers.Authorization = `Bearer ${key}`;
      const response = await fetch("/api/calls", {
        method: "POST",
        headers,
        body: JSON.stringify(scenario ? { scenario } : {}),
      });
      if (!response.ok) throw new Error(`the gateway answered ${response.status}`);
      const call = await response.json();
      if (phase !== "connecting") throw new Error("cancelled"); // hung up while waiting
      setStatus("Opening the microphone…");
      const opened = await openMicrophone(ctx);
      if (phase !== "connecting") {
        await opened.close();
        throw new Error("cancelled");
      }
      media = opened;
      await ctx.resume();
      connect(call);
    } catch (error) {
      if (phase !== "connecting") {
        ctx.close().catch(() => {});
        return; // the caller hung up first; the status already says so
      }
      await release();
      ctx.close().catch(() => {});
      setPhase("idle");
      setStatus(`Could not start the call: ${error.message || error}`);
    }
  }

  function connect(call) {
    callId = call.call_id;
    // The token says which call, which scenario and who the caller is.
    const query = new URLSearchParams({ token: call.token });
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/media/browser?${query}`);
    socket.binaryType = "arraybuffer";
    ws = socket;
    socket.onopen = () => {
      socket.send(
        JSON.stringify({ type: "start", call_id: call.call_id, sample_rate: WIRE_RATE, encoding: "pcm16" }),
      );
      setPhase("in-call");
      setStatus("Connected. Speak any time.");
      pingTimer = setInterval(() => send({ type: "ping" }), PING_MS);
    };
    socket.onmessage = onMessage;
    socket.onclose = (event) => {
      if (ws !== socket) return;
      const why = event.reason ? `: ${event.reason}` : "";
      if (!/^Call ended/.test(ui.status.textContent) || why) setStatus(`Call ended${why}.`);
      finish();
    };
    socket.onerror = () => setStatus("Connection problem…");
  }

  function send(message) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  function hangUp() {
    if (phase === "idle") return;
    // `stop` tells the gateway the caller hung up (not a dropped line it should wait for);
    // close() sends after it, since a WebSocket flushes queued messages before closing.
    send({ type: "stop" });
    if (ws) ws.close(1000, "caller hung up");
    setStatus("Call ended: you hung up.");
    finish();
  }

  async function release() {
    stopPlayback();
    const held = media;
    media = null;
    if (!held) return;
    await held.close();
  }

  function finish() {
    clearInterval(pingTimer);
    pingTimer = null;
    ws = null;
    ui.speaking.textContent = "";
    release();
    setPhase("idle");
  }

  function pressKey(digit) {
    if (phase !== "in-call") return;
    send({ type: "dtmf", digits: digit });
    setStatus(`Sent keypad ${digit}.`);
  }

  ui.call.addEventListener("click", startCall);
  ui.hangup.addEventListener("click", hangUp);
  ui.keypad.addEventListener("click", (event) => {
    const key = event.target.closest("button[data-digit]");
    if (key) pressKey(key.dataset.digit);
  });
  window.addEventListener("pagehide", () => phase !== "idle" && hangUp());
  setPhase("idle");

  // Read-only counters for tests and debugging; they reveal nothing the page does not show.
  const api = {};
  for (const key of Object.keys(stats)) {
    Object.defineProperty(api, key, { enumerable: true, get: () => stats[key] });
  }
  Object.defineProperties(api, {
    state: { enumerable: true, get: () => phase },
    callId: { enumerable: true, get: () => callId },
    activeAgent: { enumerable: true, get: () => activeAgent },
    scheduled: { enumerable: true, get: () => (media ? media.player.scheduled : 0) },
    contextRate: { enumerable: true, get: () => (media ? media.ctx.sampleRate : null) },
    events: { enumerable: true, get: () => ({ ...eventCounts }) },
  });
  Object.defineProperty(window, "softphone", { value: Object.freeze(api), enumerable: true });
})();
