// The Trellis dashboard's one script, hand-written, with no dependencies.
// It confirms actions before they are posted, opens the step a DAG node
// links to, and swaps in live updates of the page (server-sent events).
// Every page works without it, only without live updates.
(function () {
  'use strict';

  var token = document.querySelector('meta[name="trellis-csrf"]');

  // Ask before an action; fill in this browser's token, which live
  // updates (shared by every browser watching the page) do not carry.
  document.addEventListener('submit', function (e) {
    var form = e.target;
    if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== 'post') {
      return;
    }
    var field = form.querySelector('input[name="csrf"]');
    if (field && !field.value && token) {
      field.value = token.content;
    }
    var question = form.getAttribute('data-confirm');
    if (!question) {
      return;
    }
    if (!window.confirm(question)) {
      e.preventDefault();
      return;
    }
    var yes = form.querySelector('input[name="confirm"]');
    if (!yes) {
      yes = document.createElement('input');
      yes.type = 'hidden';
      yes.name = 'confirm';
      form.appendChild(yes);
    }
    yes.value = 'yes';
  });

  // A DAG node links to its step's details: open them, and mark the node.
  function showTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    document.querySelectorAll('g.node.selected').forEach(function (n) {
      n.classList.remove('selected');
    });
    if (!id) {
      return;
    }
    var el = document.getElementById(id);
    if (el && el.tagName === 'DETAILS') {
      el.open = true;
      document.querySelectorAll('g.node a').forEach(function (a) {
        if (a.getAttribute('href') === '#' + id) {
          a.parentNode.classList.add('selected');
        }
      });
    }
  }
  window.addEventListener('hashchange', showTarget);
  showTarget();

  // Live updates: the server sends the new HTML of the page's live part
  // whenever it changes. Steps the reader opened or closed stay so.
  var region = document.getElementById('live');
  var url = region && region.getAttribute('data-live');
  if (!url || !window.EventSource) {
    return;
  }
  var state = document.getElementById('live-state');
  var last = null;
  var scratch = document.createElement('template');
  var updates = 0;
  var source = new EventSource(url);
  source.addEventListener('open', function () {
    if (state) {
      state.className = 'live on';
      state.title = 'Updates without reloading';
    }
  });
  source.addEventListener('error', function () {
    if (state) {
      state.className = 'live off';
      // A refused stream (503: too many live pages open) is not retried;
      // the page stays as loaded.
      state.title = source.readyState === EventSource.CLOSED ?
        'No live updates: reload the page later' : 'Live updates are reconnecting';
    }
  });
  // While a button is held down on the page, an update waits: replacing
  // the node under the pointer between press and release would lose the
  // click (and text being selected). It is applied once released, after
  // the click has been dispatched.
  var pressed = false;
  var pending = null;
  document.addEventListener('pointerdown', function () {
    pressed = true;
  }, true);
  document.addEventListener('pointerup', function () {
    pressed = false;
    if (pending !== null) {
      var data = pending;
      pending = null;
      region.removeAttribute('data-held');
      setTimeout(function () {
        apply(data);
      }, 0);
    }
  }, true);

  function apply(data) {
    if (pressed) {
      pending = data;
      region.setAttribute('data-held', '');
      return;
    }
    // The first update repeats what the page shows: leave the page (and
    // what the reader is pointing at) alone unless something changed.
    scratch.innerHTML = data;
    if (scratch.innerHTML === region.innerHTML) {
      return;
    }
    var open = {};
    region.querySelectorAll('details').forEach(function (d) {
      if (d.id) {
        open[d.id] = d.open;
      }
    });
    region.innerHTML = data;
    region.querySelectorAll('details').forEach(function (d) {
      if (d.id in open) {
        d.open = open[d.id];
      }
    });
    showTarget();
    updates++;
    region.setAttribute('data-updates', String(updates));
  }

  source.addEventListener('update', function (e) {
    if (e.data === last) {
      return;
    }
    last = e.data;
    apply(e.data);
  });
  window.addEventListener('pagehide', function () {
    source.close();
  });
})();
