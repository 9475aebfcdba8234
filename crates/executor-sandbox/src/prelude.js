(function (hostCall, hostLog, hostEmit, hostClock, hostSeed, hostTimeOrigin) {
  "use strict";
  const g = globalThis;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  // Bytes in tool arguments: JSON has none (a Uint8Array would stringify as {"0":137,"1":80,…}),
  // so a typed array, DataView or ArrayBuffer crosses to the host as
  // {_tag:"Bytes", encoding:"base64", data}, which integrations that send bytes recognise.
  const U8 = g.Uint8Array;
  const toBase64 = U8.prototype.toBase64;
  const isView = g.ArrayBuffer.isView;
  const AB = g.ArrayBuffer;
  const bytesOut = (bytes) => ({ _tag: "Bytes", encoding: "base64", data: toBase64.call(bytes) });
  const withBytes = (_key, value) => {
    if (typeof value !== "object" || value === null) return value;
    if (isView(value)) return bytesOut(new U8(value.buffer, value.byteOffset, value.byteLength));
    if (value instanceof AB) return bytesOut(new U8(value));
    return value;
  };

  const format = (value) => {
    if (typeof value === "string") return value;
    if (typeof value === "function") return "[Function]";
    if (value instanceof Error) {
      try { return String(value); } catch (_) { return "[Error]"; }
    }
    try {
      const json = stringify(value);
      if (json !== undefined) return json;
    } catch (_) { /* fall through */ }
    try { return String(value); } catch (_) { return "[unprintable]"; }
  };

  const console = {};
  for (const level of ["log", "warn", "error", "info", "debug"]) {
    console[level] = function (...args) {
      hostLog(level, args.map(format).join(" "));
    };
  }
  console.trace = console.debug;

  const pathOf = (segments) => ["tools", ...segments].join(".");
  const notEnumerable = (segments) =>
    new TypeError(
      `${pathOf(segments)} is a lazy proxy and cannot be enumerated. ` +
        "Use tools.search({ query: \"...\" }) to find tools, and " +
        "tools.describe.tool({ path: \"...\" }) to see a tool's input and output types; " +
        "then call it as `await tools.<path>(args)`.",
    );

  const STATE = Symbol("tools");
  // One handler for every proxy; a proxy's path lives in its target. Children are made once
  // per name, so `tools.a.b.c.d(...)` in a loop allocates nothing after its first pass.
  const proxyHandler = {
    get(target, prop) {
      // Not thenable (so `await tools.x` does not hang) and not JSON-serialisable via toJSON.
      if (typeof prop === "symbol" || prop === "then" || prop === "toJSON") return undefined;
      const state = target[STATE];
      let child = state.children.get(prop);
      if (child === undefined) {
        child = makeTools([...state.segments, prop]);
        state.children.set(prop, child);
      }
      return child;
    },
    set() { return false; },
    defineProperty() { return false; },
    deleteProperty() { return false; },
    ownKeys(target) { throw notEnumerable(target[STATE].segments); },
    getOwnPropertyDescriptor(target) { throw notEnumerable(target[STATE].segments); },
    apply(target, _this, args) {
      const { segments, path } = target[STATE];
      if (segments.length === 0) {
        throw new TypeError("Tool path missing in invocation");
      }
      // Created here so its stack points at the agent's call site.
      const site = new Error("");
      let json = "";
      if (args[0] !== undefined) {
        try {
          json = stringify(args[0], withBytes);
        } catch (e) {
          site.name = "TypeError";
          site.message = `Arguments to tools.${path} are not JSON-serialisable: ${e && e.message}`;
          return Promise.reject(site);
        }
        if (json === undefined) json = "";
      }
      return hostCall(path, json).then((reply) => {
        if (reply[0] === "r") return parse(reply.slice(1));
        site.message = reply.slice(1);
        throw site;
      });
    },
  };
  const makeTools = (segments) => {
    // An arrow function, so that the proxy is callable. The path is kept under a symbol the code
    // cannot name (`get` answers every name with a child, `ownKeys` throws).
    const target = () => {};
    target[STATE] = { segments, path: segments.join("."), children: new Map() };
    return new Proxy(target, proxyHandler);
  };

  Object.defineProperty(g, "tools", {
    value: makeTools([]),
    writable: false,
    enumerable: false,
    configurable: false,
  });
  Object.defineProperty(g, "console", {
    value: console,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  g.emit = function emit(value) {
    const json = value === undefined ? "null" : stringify(value);
    if (!hostEmit(json === undefined ? "null" : json)) {
      throw new Error("emit: output limit exceeded");
    }
    return undefined;
  };
  // Time and randomness are replay-stable: the clock belongs to the host (which replays the values
  // it handed out when an execution is re-run), and Math.random is seeded per execution.
  const RealDate = g.Date;
  const clock = () => hostClock();
  const DateShim = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      return Reflect.construct(target, args.length === 0 ? [clock()] : args, newTarget);
    },
    apply() {
      return new RealDate(clock()).toString();
    },
  });
  Object.defineProperty(RealDate, "now", {
    value: function now() { return clock(); },
    writable: true,
    enumerable: false,
    configurable: true,
  });
  Object.defineProperty(RealDate.prototype, "constructor", {
    value: DateShim,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  Object.defineProperty(g, "Date", {
    value: DateShim,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  if (g.performance !== undefined) {
    // QuickJS's own `performance.now` is read-only, so the object is replaced.
    // The origin (and the seed below) are asked of the host at first use: this prelude runs
    // before the sandbox is bound to its execution.
    let origin;
    let originKnown = false;
    const performance = {
      now() {
        const t = clock();
        if (!originKnown) {
          origin = hostTimeOrigin();
          originKnown = true;
        }
        if (origin !== origin) origin = t;
        return t - origin;
      },
    };
    Object.defineProperty(g, "performance", {
      value: performance,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  // xoshiro128** over four 32-bit words.
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0, seeded = false;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  const imul = Math.imul;
  Object.defineProperty(Math, "random", {
    value: function random() {
      if (!seeded) {
        const seed = hostSeed();
        s0 = seed[0] | 0; s1 = seed[1] | 0; s2 = seed[2] | 0; s3 = seed[3] | 0;
        seeded = true;
      }
      const result = imul(rotl(imul(s1, 5), 7), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = rotl(s3, 11);
      return result / 4294967296;
    },
    writable: true,
    enumerable: false,
    configurable: true,
  });

  g.fetch = function fetch() {
    throw new Error("fetch is disabled in QuickJS executor");
  };
})(
  globalThis.__executor_call,
  globalThis.__executor_log,
  globalThis.__executor_emit,
  globalThis.__executor_clock,
  globalThis.__executor_seed,
  globalThis.__executor_time_origin,
);
delete globalThis.__executor_call;
delete globalThis.__executor_log;
delete globalThis.__executor_emit;
delete globalThis.__executor_clock;
delete globalThis.__executor_seed;
delete globalThis.__executor_time_origin;
