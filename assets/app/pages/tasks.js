// /tasks — the kanban board: five columns, drag a card to change its status (bulk PUT), the quality
// gate's refusal shown clearly, create/edit in a dialog with comments and review.

import { del, get, post, put, query } from '../api.js';
import { on } from '../sse.js';
import { can, username } from '../session.js';
import {
  badge, busy, button, clear, confirmDialog, debounce, empty, errorText, failure, field, fmtAgo, fmtTime,
  formError, h, input, label, loading, mount, openDialog, pageHeader, select, showFormError, textarea, toast,
} from '../ui.js';

const STATUSES = ['inbox', 'assigned', 'in_progress', 'quality_review', 'done'];
const PRIORITIES = ['critical', 'high', 'medium', 'low'];

async function fetchTasks() {
  const out = [];
  for (let offset = 0; offset < 2000; offset += 200) {
    const r = await get(`/tasks?limit=200&offset=${offset}`);
    out.push(...r.tasks);
    if (out.length >= r.total || !r.tasks.length) break;
  }
  return out;
}

function taskForm(task, agentNames) {
  const t = task || { status: 'inbox', priority: 'medium', tags: [] };
  const listId = `agents-${Math.random().toString(36).slice(2, 7)}`;
  const assignee = input('assigned_to', t.assigned_to || '', { list: listId, placeholder: 'agent name', autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'form' },
    field('Title', input('title', t.title || '', { required: true, maxlength: 500 })),
    field('Description', textarea('description', t.description || '', { rows: 4 })),
    h(
      'div',
      { class: 'form-row' },
      field('Status', select('status', STATUSES, t.status)),
      field('Priority', select('priority', PRIORITIES, t.priority)),
    ),
    h(
      'div',
      { class: 'form-row' },
      field('Assigned to', assignee),
      field('Due date', input('due_date', (t.due_date || '').slice(0, 10), { type: 'date' })),
    ),
    h(
      'div',
      { class: 'form-row' },
      field('Estimated hours', input('estimated_hours', t.estimated_hours ?? '', { type: 'number', min: 0, step: 0.5 })),
      field('Tags', input('tags', (t.tags || []).join(', '), { placeholder: 'comma separated' })),
    ),
    h('datalist', { id: listId }, agentNames.map((n) => h('option', { value: n }))),
  );
  const read = () => {
    const v = (name) => form.elements[name].value.trim();
    const body = {
      title: v('title'),
      description: v('description'),
      status: v('status'),
      priority: v('priority'),
      tags: v('tags') ? v('tags').split(',').map((s) => s.trim()).filter(Boolean) : [],
    };
    if (v('assigned_to') || (task && task.assigned_to)) body.assigned_to = v('assigned_to');
    if (v('due_date')) body.due_date = v('due_date');
    if (v('estimated_hours') !== '') body.estimated_hours = Number(v('estimated_hours'));
    return body;
  };
  return { form, read };
}

export default {
  title: 'Tasks',
  render(root, { params }) {
    let tasks = [];
    let agentNames = [];
    let filter = { text: '', assignee: '', priority: '' };
    const gate = h('div', { class: 'notice notice-error gate-message', role: 'alert', id: 'gate-message', hidden: true });
    const board = h('div', { class: 'board', id: 'board' });
    const operator = can('operator');
    const newBtn = operator ? button('New task', () => openEditor(null), { kind: 'primary' }) : null;
    const search = input('search', '', { type: 'search', placeholder: 'Filter by title or tag', 'aria-label': 'Filter tasks' });
    const assigneeSel = select('assignee', [['', 'Anyone']], '', { 'aria-label': 'Assignee' });
    const prioSel = select('priority', [['', 'Any priority'], ...PRIORITIES.map((p) => [p, p])], '', { 'aria-label': 'Priority' });
    search.addEventListener('input', debounce(() => { filter.text = search.value.trim().toLowerCase(); draw(); }, 120));
    assigneeSel.addEventListener('change', () => { filter.assignee = assigneeSel.value; draw(); });
    prioSel.addEventListener('change', () => { filter.priority = prioSel.value; draw(); });

    root.append(
      pageHeader('Tasks', operator ? 'Drag a card to another column, or open it, to change its status.' : 'Read-only: your role cannot change tasks.', newBtn),
      h('div', { class: 'toolbar' }, search, assigneeSel, prioSel),
      gate,
      board,
    );
    mount(board, loading());

    const visible = (t) =>
      (!filter.text || t.title.toLowerCase().includes(filter.text) || (t.tags || []).some((g) => g.toLowerCase().includes(filter.text))) &&
      (!filter.assignee || t.assigned_to === filter.assignee) &&
      (!filter.priority || t.priority === filter.priority);

    function showGate(message, taskId) {
      clear(gate);
      gate.append(
        h('strong', {}, 'Not moved to Done. '),
        `${message}. A quality reviewer has to approve the task first.`,
        ' ',
        taskId ? button('Open task to review', () => openTask(taskId), { small: true }) : null,
        button('Dismiss', () => { gate.hidden = true; }, { small: true, kind: 'ghost' }),
      );
      gate.hidden = false;
    }

    function card(t) {
      const el = h(
        'article',
        { class: ['task-card', `prio-${t.priority}`], draggable: operator ? 'true' : null, tabindex: 0, dataset: { taskId: t.id, title: t.title } },
        h('div', { class: 'task-top' }, badge(t.priority, 'badge-prio'), h('span', { class: 'muted task-id' }, `#${t.id}`)),
        h('h3', { class: 'task-title' }, t.title),
        t.description ? h('p', { class: 'task-desc' }, t.description.length > 140 ? `${t.description.slice(0, 140)}…` : t.description) : null,
        h(
          'div',
          { class: 'task-meta' },
          t.assigned_to ? h('span', { class: 'assignee', title: 'Assigned to' }, `@${t.assigned_to}`) : h('span', { class: 'muted' }, 'unassigned'),
          t.due_date ? h('span', { class: 'muted', title: 'Due' }, `due ${t.due_date.slice(0, 10)}`) : null,
          h('span', { class: 'muted' }, fmtAgo(t.updated_at)),
        ),
        (t.tags || []).length ? h('div', { class: 'tags' }, t.tags.slice(0, 5).map((g) => h('span', { class: 'tag' }, g))) : null,
      );
      el.addEventListener('click', () => openTask(t.id));
      el.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') openTask(t.id); });
      el.addEventListener('dragstart', (ev) => {
        ev.dataTransfer.setData('text/plain', String(t.id));
        ev.dataTransfer.effectAllowed = 'move';
        el.classList.add('dragging');
      });
      el.addEventListener('dragend', () => el.classList.remove('dragging'));
      return el;
    }

    function draw() {
      const names = [...new Set(tasks.map((t) => t.assigned_to).filter(Boolean).concat(agentNames))].sort();
      const current = assigneeSel.value;
      mount(assigneeSel, h('option', { value: '' }, 'Anyone'), names.map((n) => h('option', { value: n, selected: n === current }, n)));
      clear(board);
      for (const status of STATUSES) {
        const items = tasks.filter((t) => t.status === status && visible(t)).sort((a, b) => PRIORITIES.indexOf(a.priority) - PRIORITIES.indexOf(b.priority) || b.updated_at - a.updated_at);
        const list = h('div', { class: 'column-body' }, items.length ? items.map(card) : h('p', { class: 'column-empty muted' }, 'No tasks'));
        const col = h(
          'section',
          { class: ['column', `col-${status}`], dataset: { status }, 'aria-label': label(status) },
          h('header', { class: 'column-head' }, h('h2', {}, label(status)), h('span', { class: 'count' }, String(items.length))),
          list,
        );
        if (operator) {
          col.addEventListener('dragover', (ev) => { ev.preventDefault(); ev.dataTransfer.dropEffect = 'move'; col.classList.add('drop-target'); });
          col.addEventListener('dragleave', (ev) => { if (!col.contains(ev.relatedTarget)) col.classList.remove('drop-target'); });
          col.addEventListener('drop', (ev) => {
            ev.preventDefault();
            col.classList.remove('drop-target');
            const id = Number(ev.dataTransfer.getData('text/plain'));
            if (id) move(id, status);
          });
        }
        board.append(col);
      }
    }

    async function move(id, status) {
      const t = tasks.find((x) => x.id === id);
      if (!t || t.status === status) return;
      const previous = t.status;
      t.status = status;
      draw();
      try {
        await put('/tasks', { tasks: [{ id, status }] });
        gate.hidden = true;
        toast(`Moved “${t.title}” to ${label(status)}`, 'success');
      } catch (e) {
        t.status = previous;
        draw();
        if (e.status === 403 && /approval/i.test(e.message)) showGate(e.message, id);
        else toast(errorText(e), 'error');
      }
    }

    async function load() {
      try {
        const [list, agents] = await Promise.all([fetchTasks(), get('/agents?limit=200').catch(() => ({ agents: [] }))]);
        tasks = list;
        agentNames = agents.agents.map((a) => a.name);
        draw();
      } catch (e) {
        mount(board, failure(e, 'Tasks'));
      }
    }

    function openEditor(task) {
      const { form, read } = taskForm(task, agentNames);
      const err = formError();
      form.append(err);
      const save = button(task ? 'Save changes' : 'Create task', null, { kind: 'primary', type: 'submit' });
      save.setAttribute('form', (form.id = `task-form-${Date.now()}`));
      const { close } = openDialog({ title: task ? `Edit task #${task.id}` : 'New task', body: form, actions: [button('Cancel', () => close()), save] });
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        err.hidden = true;
        const body = read();
        if (!body.title) return showFormError(err, new Error('Give the task a title.'));
        save.disabled = true;
        try {
          if (task) {
            await put(`/tasks/${task.id}`, body);
            toast('Task saved', 'success');
          } else {
            const r = await post('/tasks', { ...body, created_by: username() });
            toast(`Created task #${r.task.id}`, 'success');
          }
          close();
          load();
        } catch (e) {
          showFormError(err, e);
        } finally {
          save.disabled = false;
        }
      });
      form.elements.title.focus();
    }

    async function openTask(id) {
      let t;
      try {
        t = (await get(`/tasks/${id}`)).task;
      } catch (e) {
        toast(errorText(e), 'error');
        return;
      }
      const comments = h('div', { class: 'comments' }, loading());
      const reviews = h('div', { class: 'reviews' }, loading());
      const loadComments = async () => {
        try {
          const r = await get(`/tasks/${id}/comments`);
          mount(
            comments,
            r.comments.length
              ? h('ul', { class: 'comment-list' }, r.comments.map((c) => h('li', {}, h('div', { class: 'comment-head' }, h('strong', {}, c.author), h('time', { class: 'muted' }, fmtTime(c.created_at))), h('p', {}, c.content))))
              : empty('No comments yet.'),
          );
        } catch (e) {
          mount(comments, failure(e, 'Comments'));
        }
      };
      const loadReviews = async () => {
        try {
          const r = await get(`/quality-review${query({ taskId: id })}`);
          mount(
            reviews,
            r.reviews.length
              ? h('ul', { class: 'review-list' }, r.reviews.map((rv) => h('li', {}, badge(rv.status), ' ', h('strong', {}, rv.reviewer), h('span', { class: 'muted' }, ` · ${fmtTime(rv.created_at)}`), rv.notes ? h('p', {}, rv.notes) : null)))
              : empty('Not reviewed yet.'),
          );
        } catch (e) {
          mount(reviews, failure(e, 'Quality review'));
        }
      };
      const commentBox = textarea('content', '', { rows: 2, placeholder: 'Write a comment… (@name mentions an agent)', 'aria-label': 'Comment' });
      const commentForm = operator
        ? h('form', { class: 'comment-form' }, commentBox, button('Add comment', null, { type: 'submit', small: true, kind: 'primary' }))
        : null;
      commentForm?.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const content = commentBox.value.trim();
        if (!content) return;
        await busy(ev.submitter || commentForm.querySelector('button'), async () => {
          await post(`/tasks/${id}/comments`, { content });
          commentBox.value = '';
          await loadComments();
        });
      });
      const notes = textarea('notes', '', { rows: 2, placeholder: 'Review notes', 'aria-label': 'Review notes' });
      const review = async (btn, status) => {
        await busy(btn, async () => {
          const r = await post('/quality-review', { taskId: id, status, notes: notes.value.trim() });
          notes.value = '';
          toast(status === 'approved' ? `Approved; task is now ${label(r.task_status)}` : 'Review recorded: rejected', status === 'approved' ? 'success' : 'info');
          gate.hidden = true;
          await loadReviews();
          load();
        });
      };
      const approveBtn = button('Approve', (ev) => review(ev.currentTarget, 'approved'), { kind: 'success', small: true });
      const rejectBtn = button('Reject', (ev) => review(ev.currentTarget, 'rejected'), { kind: 'danger', small: true });
      const body = h(
        'div',
        { class: 'task-detail' },
        h(
          'div',
          { class: 'detail-grid' },
          h('div', {}, h('div', { class: 'muted small' }, 'Status'), badge(t.status)),
          h('div', {}, h('div', { class: 'muted small' }, 'Priority'), badge(t.priority)),
          h('div', {}, h('div', { class: 'muted small' }, 'Assigned to'), t.assigned_to || '—'),
          h('div', {}, h('div', { class: 'muted small' }, 'Created by'), t.created_by),
          h('div', {}, h('div', { class: 'muted small' }, 'Due'), t.due_date || '—'),
          h('div', {}, h('div', { class: 'muted small' }, 'Updated'), fmtTime(t.updated_at)),
        ),
        t.description ? h('p', { class: 'pre' }, t.description) : h('p', { class: 'muted' }, 'No description.'),
        (t.tags || []).length ? h('div', { class: 'tags' }, t.tags.map((g) => h('span', { class: 'tag' }, g))) : null,
        h('h3', {}, 'Quality review'),
        reviews,
        operator ? h('div', { class: 'review-form' }, notes, h('div', { class: 'row' }, approveBtn, rejectBtn)) : null,
        h('h3', {}, 'Comments'),
        comments,
        commentForm,
      );
      const actions = [];
      if (operator) {
        actions.push(
          button('Delete', async () => {
            if (!(await confirmDialog(`Delete task “${t.title}”?`, 'Delete'))) return;
            try {
              await del(`/tasks/${id}`);
              toast('Task deleted', 'success');
              close();
              load();
            } catch (e) {
              toast(errorText(e), 'error');
            }
          }, { kind: 'danger-ghost' }),
          button('Edit', () => { close(); openEditor(t); }, { kind: 'primary' }),
        );
      }
      const { close } = openDialog({ title: `#${t.id} ${t.title}`, body, actions, wide: true });
      loadComments();
      loadReviews();
    }

    load();
    const reload = debounce(load, 150);
    const off = on(['task.*'], reload);
    if (params.get('task')) openTask(Number(params.get('task')));
    return off;
  },
};
