// Baton's browser audio, shared by the softphone and the human-agent console: the microphone
// as PCM16 mono 16 kHz frames for the gateway, and playback of the frames it sends back.
// Plain modern JS, no build step and no external resources: the gateway serves this file as is.
"use strict";

(() => {
  const WIRE_RATE = 16000; // the gateway speaks PCM16 mono 16 kHz only
  const FRAME_SAMPLES = 320; // 20 ms at 16 kHz: the frame size the gateway's endpointer counts in
  // The gateway paces audio ~60 ms ahead of real time; starting playback a little later than
  // "now" absorbs network jitter without adding noticeable delay.
  const JITTER_S = 0.08;

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

  // Opens the microphone on `ctx` and calls `onFrame(ArrayBuffer)` with each 20 ms of PCM16.
  async function openMicrophone(ctx, onFrame) {
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
    // speaker's own voice out of the speakers.
    const sink = ctx.createGain();
    sink.gain.value = 0;
    source.connect(worklet).connect(sink).connect(ctx.destination);
    worklet.port.onmessage = (event) => onFrame(event.data);
    return {
      ctx,
      stream,
      async close() {
        worklet.port.onmessage = null;
        source.disconnect();
        worklet.disconnect();
        for (const track of stream.getTracks()) track.stop(); // the browser's mic light goes off
        await ctx.close().catch(() => {});
      },
    };
  }

  // Plays PCM16 chunks back to back on `ctx`; `stop()` cuts everything scheduled at once.
  function createPlayer(ctx) {
    let playing = new Set(); // scheduled AudioBufferSourceNodes, so a clear can stop them all
    let playhead = 0; // context time at which the next received chunk starts
    return {
      // Schedules one chunk; returns its length in ms (0 for an empty one).
      play(data) {
        const pcm = new Int16Array(data, 0, data.byteLength >> 1);
        if (pcm.length === 0) return 0;
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
        return (pcm.length * 1000) / WIRE_RATE;
      },
      // Stops every scheduled chunk; returns how many were cut short.
      stop() {
        let stopped = 0;
        for (const node of playing) {
          node.onended = null;
          try {
            node.stop();
          } catch {
            // already stopped
          }
          node.disconnect();
          stopped++;
        }
        playing = new Set();
        playhead = 0;
        return stopped;
      },
      get scheduled() {
        return playing.size;
      },
    };
  }

  Object.defineProperty(window, "BatonAudio", {
    value: Object.freeze({ WIRE_RATE, FRAME_SAMPLES, openMicrophone, createPlayer }),
    enumerable: true,
  });
})();
