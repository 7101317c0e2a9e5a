// Baton web softphone: a call over the gateway's browser protocol (see media_gateway/serializers.py).
// Plain modern JS, no build step and no external resources: the gateway serves this file as is.
"use strict";

(() => {
  const WIRE_RATE = 16000; // the gateway speaks PCM16 mono 16 kHz only
  const FRAME_SAMPLES = 320; // 20 ms at 16 kHz: the frame size the gateway's endpointer counts in
  // The gateway paces audio ~60 ms ahead of real time; starting playback a little later than
  // "now" absorbs network jitter without adding noticeable delay.
  const JITTER_S = 0.08;
  const PING_MS = 15000; // keeps idle proxies from closing a quiet call

  // Runs on the audio rendering thread. The context usually runs at 44.1 or 48 kHz, so this
  // low-passes below 8 kHz (otherwise higher frequencies alias into the speech band) and takes
  // samples at 16 kHz by linear interpolation, posting each 20 ms as PCM16 little-endian.
  const WORKLET_SOURCE = `
    class Pcm16Downsampler extends AudioWorkletProcessor {
      constructor(options) {
        super();
        const { targetRate, frameSamples } = options.processorOptions;
        this.step = sampleRate / targetRate; // input samples per output sample
        this.due = this.step; // input samples until the next output sample
        this.frameSamples = frameSamples;
        this.frame = new Int16Array(frameSamples);
        this.filled = 0;
        this.prev = 0;
        const taps = 31;
        const cutoff = Math.min(0.5, (0.45 * targetRate) / sampleRate); // cycles per input sample
        const middle = (taps - 1) / 2;
        const coeffs = new Float32Array(taps);
        let sum = 0;
        for (let n = 0; n < taps; n++) {
          const x = n - middle;
          const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
          const hamming = 0.54 - 0.46 * Math.cos((2 * Math.PI * n) / (taps - 1));
          coeffs[n] = sinc * hamming;
          sum += coeffs[n];
        }
        for (let n = 0; n < taps; n++) coeffs[n] /= sum; // unity gain at DC
        this.coeffs = coeffs;
        this.ring = new Float32Array(taps);
        this.head = 0;
      }

      process(inputs) {
        const samples = inputs[0] && inputs[0][0];
        if (!samples) return true; // no input yet (or the track ended): stay alive
        const { coeffs, ring } = this;
        const taps = ring.length;
        for (let i = 0; i < samples.length; i++) {
          ring[this.head] = samples[i];
          this.head = (this.head + 1) % taps;
          let y = 0;
          for (let k = 0, j = this.head; k < taps; k++, j = (j + 1) % taps) y += coeffs[k] * ring[j];
          this.due -= 1;
          while (this.due <= 0) {
            const back = -this.due; // how far before this sample the output instant lies (0..1)
            this.emit(y + back * (this.prev - y));
            this.due += this.step;
          }
          this.prev = y;
        }
        return true;
      }

      emit(value) {
        const s = Math.max(-1, Math.min(1, value));
        this.frame[this.filled++] = s < 0 ? s * 0x8000 : s * 0x7fff;
        if (this.filled === this.frameSamples) {
          this.port.postMessage(this.frame.buffer, [this.frame.buffer]); // transfer, no copy
          this.frame = new Int16Array(this.frameSamples);
          this.filled = 0;
        }
      }
    }
    registerProcessor("pcm16-downsampler", Pcm16Downsampler);
  `;

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
  let media = null; // { ctx, stream, source, worklet, sink } while a call holds the microphone
  let playing = new Set(); // scheduled AudioBufferSourceNodes, so a barge-in can stop them all
  let playhead = 0; // context time at which the next received chunk starts
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
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, channelCount: 1 },
    });
    const url = URL.createObjectURL(new Blob([WORKLET_SOURCE], { type: "text/javascript" }));
    try {
      await ctx.audioWorklet.addModule(url);
    } finally {
      URL.revokeObjectURL(url);
    }
    const source = ctx.createMediaStreamSource(stream);
    const worklet = new AudioWorkletNode(ctx, "pcm16-downsampler", {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      channelCount: 1,
      channelCountMode: "explicit", // mix a stereo device down to the mono the gateway expects
      processorOptions: { targetRate: WIRE_RATE, frameSamples: FRAME_SAMPLES },
    });
    // A node must reach the destination to be pulled by the graph; a muted gain keeps the
    // caller's own voice out of the speakers.
    const sink = ctx.createGain();
    sink.gain.value = 0;
    source.connect(worklet).connect(sink).connect(ctx.destination);
    worklet.port.onmessage = (event) => {
      // Audio is sent only once the stream is started; earlier frames are simply dropped.
      if (phase === "in-call" && ws && ws.readyState === WebSocket.OPEN) {
        ws.send(event.data);
        stats.framesSent++;
      }
    };
    return { ctx, stream, source, worklet, sink };
  }

  // --- playback ---------------------------------------------------------------------------

  function play(data) {
    if (!media) return;
    const { ctx } = media;
    const pcm = new Int16Array(data, 0, data.byteLength >> 1);
    if (pcm.length === 0) return;
    stats.audioFramesReceived++;
    stats.audioMsReceived += (pcm.length * 1000) / WIRE_RATE;
    const buffer = ctx.createBuffer(1, pcm.length, WIRE_RATE); // the context resamples
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 32768;
    const node = ctx.createBufferSource();
    node.buffer = buffer;
    node.connect(ctx.destination);
    // First chunk, or the queue ran dry: restart a jitter cushion ahead of now.
    if (playhead < ctx.currentTime + 0.01) playhead = ctx.currentTime + JITTER_S;
    node.start(playhead);
    playhead += buffer.duration;
    playing.add(node);
    node.onended = () => playing.delete(node);
  }

  function stopPlayback() {
    for (const node of playing) {
      node.onended = null;
      try {
        node.stop();
      } catch {
        // already stopped
      }
      node.disconnect();
      stats.sourcesStopped++;
    }
    playing = new Set();
    playhead = 0;
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
      case "supervisor_action":
        return [
          `Supervisor ${item.supervisor || ""}`.trim(),
          [field("text", [item.action, item.target, item.reason].filter(Boolean).join(" · "))],
        ];
      case "dtmf":
        return ["Keypad", [field("text", item.digits)]];
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
        for (const track of opened.stream.getTracks()) track.stop();
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
    const held = media;
    media = null;
    stopPlayback();
    if (!held) return;
    held.worklet.port.onmessage = null;
    held.source.disconnect();
    held.worklet.disconnect();
    for (const track of held.stream.getTracks()) track.stop(); // the browser's mic light goes off
    await held.ctx.close().catch(() => {});
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
    scheduled: { enumerable: true, get: () => playing.size },
    contextRate: { enumerable: true, get: () => (media ? media.ctx.sampleRate : null) },
    events: { enumerable: true, get: () => ({ ...eventCounts }) },
  });
  Object.defineProperty(window, "softphone", { value: Object.freeze(api), enumerable: true });
})();
