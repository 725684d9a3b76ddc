/* The review queue's keys (templates/admin/approvals/approval/change_list.html).
 *
 *   j / k   select the next / previous memory
 *   a       approve it            v   approve and verify it
 *   r       reject it: a note field opens in the row; Enter rejects, Escape cancels
 *   ?       show or hide the list of keys
 *
 * A decision is a fetch POST to the row's own decide URL, the one its buttons post to
 * (ApprovalAdmin.decide_view, which calls the same service as the buttons and the API), with
 * the page's CSRF token, asking for JSON. The decided row leaves the list, the pending count
 * takes the server's figure and the page stays where it is. Without script the buttons work
 * as before (a form post and a reload). No key fires while the focus is in a text field.
 */
(function () {
  "use strict";

  var table = document.getElementById("result_list");
  var help = document.getElementById("review-keys-help");
  if (!table || !help) {
    return;
  }
  var status = document.getElementById("review-keys-status");
  var selected = 0;
  var returnFocus = null;

  function rows() {
    var found = [];
    var all = table.tBodies[0] ? table.tBodies[0].rows : [];
    for (var i = 0; i < all.length; i++) {
      if (all[i].querySelector("[data-approval]")) {
        found.push(all[i]);
      }
    }
    return found;
  }

  function approvalId(row) {
    return row.querySelector("[data-approval]").getAttribute("data-approval");
  }

  function select(index, scroll) {
    var list = rows();
    if (!list.length) {
      selected = 0;
      return null;
    }
    selected = Math.max(0, Math.min(index, list.length - 1));
    for (var i = 0; i < list.length; i++) {
      var on = i === selected;
      list[i].classList.toggle("km-selected", on);
      list[i].setAttribute("aria-selected", on ? "true" : "false");
    }
    if (scroll) {
      list[selected].scrollIntoView({ block: "nearest" });
    }
    return list[selected];
  }

  function current() {
    return rows()[selected] || null;
  }

  // Typing a note, a search or a filter is not a command.
  function typing(element) {
    if (!element || element === document.body) {
      return false;
    }
    if (element.isContentEditable || element.closest("textarea, select, [contenteditable]")) {
      return true;
    }
    if (element.tagName === "INPUT") {
      var kind = (element.getAttribute("type") || "text").toLowerCase();
      return ["checkbox", "radio", "button", "submit", "reset", "image"].indexOf(kind) === -1;
    }
    return false;
  }

  function announce(text, level) {
    if (!status) {
      return;
    }
    var list = document.createElement("ul");
    list.className = "messagelist";
    var item = document.createElement("li");
    item.className = level;
    item.textContent = text; // the memory's words: never parsed as markup
    list.appendChild(item);
    status.replaceChildren(list);
  }

  function csrfToken() {
    var field = document.querySelector("#changelist-form input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function setCounts(pending) {
    var counts = document.querySelectorAll(".pending-count");
    for (var i = 0; i < counts.length; i++) {
      counts[i].textContent = String(pending);
    }
    var nouns = document.querySelectorAll(".pending-noun");
    for (var n = 0; n < nouns.length; n++) {
      nouns[n].textContent = pending === 1 ? nouns[n].dataset.one : nouns[n].dataset.many;
    }
    var listed = document.getElementById("review-results");
    if (!listed || !listed.dataset.count) {
      return; // no list count, or "more than 10,000": nothing to count down
    }
    // the list's own count (the filtered list, all pages): one fewer
    var left = Math.max(0, parseInt(listed.dataset.count, 10) - 1);
    listed.dataset.count = String(left);
    listed.textContent = left + " " + (left === 1 ? listed.dataset.one : listed.dataset.many);
    // and the bulk actions' "0 of N selected" (Django's actions.js reads data-actions-icnt)
    var counter = document.querySelector(".action-counter");
    if (counter) {
      counter.dataset.actionsIcnt = String(left);
      var ticked = table.querySelectorAll("tbody input.action-select:checked").length;
      counter.textContent =
        typeof window.interpolate === "function" && typeof window.ngettext === "function"
          ? window.interpolate(
              window.ngettext("%(sel)s of %(cnt)s selected", "%(sel)s of %(cnt)s selected", ticked),
              { sel: ticked, cnt: left },
              true
            )
          : ticked + " of " + left + " selected";
    }
  }

  function removeRow(row) {
    var index = rows().indexOf(row);
    row.remove();
    if (!rows().length) {
      var empty = document.getElementById("review-keys-empty");
      if (empty) {
        empty.hidden = false;
      }
      return;
    }
    // the next memory takes the decided one's place
    select(index >= selected ? selected : selected - 1, true);
  }

  function closeNote(row) {
    row.classList.remove("km-rejecting");
    var prompt = row.querySelector(".review-note-prompt");
    if (prompt) {
      prompt.hidden = true;
    }
  }

  function decide(row, choice, note) {
    if (!row || row.getAttribute("data-busy")) {
      return;
    }
    var button = row.querySelector('button[data-action="' + choice + '"]');
    if (!button) {
      return; // a decided row (the "all" filter) has no buttons
    }
    var id = approvalId(row);
    var body = new FormData();
    body.append("decision", choice);
    if (note) {
      body.append("note-" + id, note);
    }
    row.setAttribute("data-busy", "1");
    row.classList.add("km-busy");
    fetch(button.formAction, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
    })
      .then(function (response) {
        var type = response.headers.get("content-type") || "";
        if (type.indexOf("application/json") === -1) {
          // a login page or a proxy's error: the session ended, or the server is away
          throw new Error("The decision did not go through: reload the page and try again.");
        }
        return response.json().then(function (data) {
          return { ok: response.ok, code: response.status, data: data };
        });
      })
      .then(function (answer) {
        if (answer.ok) {
          removeRow(row);
          setCounts(answer.data.pending);
          announce(answer.data.message, "success");
          return;
        }
        if (answer.code === 409 && answer.data.code === "conflict") {
          removeRow(row); // someone decided it first: it is not waiting any more
        } else {
          row.removeAttribute("data-busy");
          row.classList.remove("km-busy");
        }
        announce(answer.data.message || "The decision did not go through.", "error");
      })
      .catch(function (error) {
        row.removeAttribute("data-busy");
        row.classList.remove("km-busy");
        announce(error.message, "error");
      });
  }

  function startReject(row) {
    var input = row && row.querySelector('input[name^="note-"]');
    if (!input || !row.querySelector('button[data-action="reject"]')) {
      return;
    }
    row.classList.add("km-rejecting");
    var prompt = row.querySelector(".review-note-prompt");
    if (prompt) {
      prompt.hidden = false;
    }
    input.focus();
  }

  function helpOpen() {
    return !help.hidden;
  }

  function toggleHelp() {
    if (helpOpen()) {
      help.hidden = true;
      if (returnFocus && returnFocus.focus) {
        returnFocus.focus();
      }
      return;
    }
    returnFocus = document.activeElement;
    help.hidden = false;
    help.focus();
  }

  // A row's note field: Enter rejects with the note (and never submits the list's form),
  // Escape closes it.
  table.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!input.name || input.name.indexOf("note-") !== 0) {
      return;
    }
    var row = input.closest("tr");
    if (event.key === "Enter") {
      event.preventDefault();
      select(rows().indexOf(row), false);
      closeNote(row);
      input.blur();
      decide(row, "reject", input.value.trim());
    } else if (event.key === "Escape") {
      event.preventDefault();
      closeNote(row);
      input.blur();
    }
  });

  // A click on a row selects it, so the keys act on what the reviewer last touched.
  table.addEventListener("click", function (event) {
    var row = event.target.closest("tr");
    var index = rows().indexOf(row);
    if (index !== -1) {
      select(index, false);
    }
  });

  help.addEventListener("click", function (event) {
    if (event.target === help || event.target.closest("[data-close]")) {
      toggleHelp();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    if (helpOpen()) {
      if (event.key === "Escape" || event.key === "?") {
        event.preventDefault();
        toggleHelp();
      }
      return;
    }
    if (typing(event.target)) {
      return;
    }
    var row = current();
    switch (event.key) {
      case "j":
        select(selected + 1, true);
        break;
      case "k":
        select(selected - 1, true);
        break;
      case "a":
        decide(row, "approve");
        break;
      case "v":
        decide(row, "verify");
        break;
      case "r":
        startReject(row);
        break;
      case "?":
        toggleHelp();
        break;
      default:
        return;
    }
    event.preventDefault();
  });

  select(0, false);
  document.documentElement.setAttribute("data-review-keys", "on");
})();
