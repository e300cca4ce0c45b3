// The review page of a running job, following its server-sent events (GET /v1/jobs/{id}/events, with the
// same sign-in cookie) instead of reloading: rounds, tool calls, verification steps and attempts appear as
// they come, and when the run ends the page becomes the finished view (fetched from the same URL, rendered
// and escaped by the server). Event data is hostile: it only ever becomes text (textContent, createTextNode),
// never markup. Without scripts, the page's <noscript> refresh does the following instead.
(function () {
  "use strict";
  var root = document.getElementById("job");
  if (!root || root.dataset.finished === "1" || !window.EventSource || !window.DOMParser) return;
  var rounds = {};
  var verifications = 0; // rows are counted across the worker's attempts at the job
  var jobAttempt = null; // the stream's `job_attempt`: which worker run of the job an event is from
  var opened = false;
  var done = false;

  function byId(id) { return document.getElementById(id); }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function clear() {
    ["rounds", "steps", "attempt-rows"].forEach(function (id) { byId(id).replaceChildren(); });
    byId("rounds").appendChild(el("p", "muted", "No model rounds yet."));
    byId("rounds").firstChild.id = "no-rounds";
    byId("attempts").hidden = true;
    rounds = {};
    verifications = 0;
  }

  function say(text) { byId("live-now").textContent = text; }

  function round(n) {
    if (!rounds[n]) {
      var box = el("details", "round");
      box.open = true;
      var summary = el("summary", null, "Round " + n);
      box.appendChild(summary);
      var none = byId("no-rounds");
      if (none) none.remove();
      byId("rounds").appendChild(box);
      rounds[n] = { box: box, summary: summary };
    }
    return rounds[n];
  }

  function modelStream(e) { // a streaming reply, about once a second: its size, calls begun and last characters
    var calls = e.tool_calls && e.tool_calls.length ? " (writing " + e.tool_calls.join(", ") + ")" : "";
    say("the model is answering: " + e.chars + " characters in " + e.seconds + " s" + calls);
    var pre = byId("live-reply");
    if (!pre) {
      pre = el("pre", "say muted");
      pre.id = "live-reply";
      byId("rounds").appendChild(pre);
    }
    pre.textContent = "… " + String(e.tail || "");
  }

  function modelCall(e) {
    var streamed = byId("live-reply");
    if (streamed) streamed.remove();
    var r = round(e.round);
    var tokens = e.tokens || {};
    var cost = typeof e.cost === "number" ? " · $" + e.cost.toFixed(4) : "";
    r.summary.textContent = "Round " + e.round + ": " + e.stop + " · " + tokens.input + " in / " + tokens.output +
      " out" + cost;
    if (e.content) r.box.appendChild(el("pre", "say", e.content));
    say("round " + e.round + ": the model answered (" + e.stop + ")");
  }

  function toolCall(e) {
    var r = round(e.round);
    var box = el("div", e.is_error ? "tool error" : "tool");
    var head = el("div");
    head.appendChild(el("b", null, e.tool));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("code", null, JSON.stringify(e.args)));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("span", "muted", e.duration_ms + " ms"));
    box.appendChild(head);
    box.appendChild(el("pre", null, e.result));
    r.box.appendChild(box);
    say("round " + e.round + ": " + e.tool + " answered; waiting for the model");
  }

  function step(e) {
    var line = el("div", "event", e.type + ": ");
    if (e.type === "verify") {
      line.appendChild(document.createTextNode((e.phase || "") + " " + (e.step || "") + " "));
      line.appendChild(el("code", null, e.command || ""));
      line.appendChild(document.createTextNode(" → " + e.outcome));
      say("verifying: " + (e.phase || "") + " " + (e.step || "") + " → " + e.outcome);
    } else if (e.type === "offline") {
      line.appendChild(document.createTextNode("tried " + e.tried + " candidates, stopped: " + e.stopped +
        (e.template ? ", template " + e.template : "")));
      say("offline engine: " + e.tried + " candidates tried");
    } else {
      line.appendChild(document.createTextNode((e.reason || "") + " " + (e.message || "")));
    }
    byId("steps").appendChild(line);
  }

  function attemptRow(e) {
    var row = el("tr", "attempt-row");
    verifications += 1;
    row.appendChild(el("th", null, verifications));
    row.appendChild(el("td", "outcome " + (e.status === "verified" ? "passed" : "failed"), e.reason));
    row.appendChild(el("td", null, e.message));
    var digest = el("code", null, String(e.diff_sha256 || "").slice(0, 12));
    digest.title = String(e.diff_sha256 || "");
    var cell = el("td");
    cell.appendChild(digest);
    row.appendChild(cell);
    byId("attempt-rows").appendChild(row);
    byId("attempts").hidden = false;
    say("attempt " + verifications + ": " + e.reason);
  }

  var handlers = {
    run_start: function () { say("started: reading the traceback and the repository"); },
    settings: function () { say("preparing the box and the baseline"); },
    environment: function () { say("environment image ready; running the baseline"); },
    model_stream: modelStream, model_call: modelCall, tool_call: toolCall, verify: step, guard_stop: step, offline: step,
    attempt: attemptRow,
    run_end: function (e) { say("ended: " + e.status + " (" + e.reason + ")"); end(); },
    end: function () { end(); }
  };

  function handle(kind, message) {
    var e;
    try { e = JSON.parse(message.data); } catch (err) { return; }
    if (!e || typeof e !== "object") return;
    if (kind !== "end" && jobAttempt !== null && e.job_attempt !== jobAttempt) clear(); // a worker began again
    if (kind !== "end") jobAttempt = e.job_attempt;
    byId("job-state").textContent = "running";
    byId("job-state").className = "state running";
    handlers[kind](e);
  }

  function end() {
    if (done) return;
    done = true;
    source.close();
    byId("live-status").textContent = "(finished; loading the result)";
    finish(0);
  }

  // The result is stored a moment after the run's last event: ask again until the page says finished.
  function finish(tries) {
    fetch(location.pathname, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" } })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        var fresh = page.getElementById("job");
        if (!fresh) { location.reload(); return; } // signed out meanwhile: the server says what to do
        if (fresh.dataset.finished !== "1" && tries < 60) { setTimeout(function () { finish(tries + 1); }, 250); return; }
        root.replaceWith(document.adoptNode(fresh));
        document.title = page.title;
      })
      .catch(function () { setTimeout(function () { finish(tries + 1); }, 1000); });
  }

  var source = new EventSource("/v1/jobs/" + encodeURIComponent(root.dataset.job) + "/events");
  source.onopen = function () {
    if (!opened) clear(); // the stream replays every event from the first, so the page starts over once
    opened = true;
    byId("live-status").textContent = "(following live)";
  };
  source.onerror = function () {
    if (done) return;
    if (source.readyState === EventSource.CLOSED) { setTimeout(function () { location.reload(); }, 5000); return; }
    byId("live-status").textContent = "(connection lost; reconnecting)";
  };
  Object.keys(handlers).forEach(function (kind) {
    source.addEventListener(kind, function (message) { handle(kind, message); });
  });
}());
