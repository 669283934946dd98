// The notes page (served natively by `app.static('/app', ...)` with a strict
// Content-Security-Policy: no inline script, so the page's logic lives here).
// It uses the example's REST API and follows its server-sent events feed.
const list = document.getElementById('notes');
const who = document.getElementById('who');
const login = document.getElementById('login');
const add = document.getElementById('add');

function show(note) {
  const item = document.createElement('li');
  item.textContent = note.text + ' ';
  const author = document.createElement('span');
  author.className = 'author';
  author.textContent = `(${note.author})`;
  item.append(author);
  list.append(item);
}

async function refresh() {
  list.replaceChildren();
  for (const note of await (await fetch('/api/notes')).json()) show(note);
  const me = await (await fetch('/me')).json();
  who.textContent = me.name ? `Signed in as ${me.name}.` : 'Not signed in.';
  login.hidden = Boolean(me.name);
  add.hidden = !me.name;
}

login.addEventListener('submit', async (event) => {
  event.preventDefault();
  const name = new FormData(login).get('name');
  const res = await fetch('/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
  if (res.ok) await refresh();
});

add.addEventListener('submit', async (event) => {
  event.preventDefault();
  const text = new FormData(add).get('text');
  await fetch('/api/notes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
  add.reset();
  // The feed's `note` event shows it, here and in every other tab.
});

const feed = new EventSource('/feed');
feed.addEventListener('tick', (event) => {
  document.getElementById('tick').textContent = `live, ${JSON.parse(event.data)}`;
});
feed.addEventListener('note', (event) => show(JSON.parse(event.data)));

refresh();
