// The dashboard's only way to the server: the public HTTP API with the user's token
// (Authorization: Bearer), kept in sessionStorage (gone when the tab closes; never in a URL).

const kTokenKey = 'drover.token';

export const session = {
  token: () => sessionStorage.getItem(kTokenKey),
  login: (token) => sessionStorage.setItem(kTokenKey, token),
  logout: () => sessionStorage.removeItem(kTokenKey),
};

// An API error: the status and the server's {code, message, details}.
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${session.token()}`, ...extra };
}

// GET (or `init.method`) `path` as JSON; throws ApiError for a non-2xx answer.
export async function api(path, init = {}) {
  const response = await fetch(path, { ...init, headers: headers(init.headers) });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { message: text };
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

// Splits an SSE text stream into frames {id, event, data}; returns the unparsed tail.
export function parseFrames(buffer, onFrame) {
  let end;
  while ((end = buffer.indexOf('\n\n')) >= 0) {
    const frame = { id: null, event: 'message', data: '' };
    for (const line of buffer.slice(0, end).split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') frame.id = value;
      else if (field === 'event') frame.event = value;
      else if (field === 'data') frame.data += (frame.data ? '\n' : '') + value;
      else if (field === 'retry') frame.retry = Number(value);
    }
    buffer = buffer.slice(end + 2);
    if (frame.data || frame.event !== 'message') onFrame(frame);
  }
  return buffer;
}

// Follows GET /v1/events with fetch() streaming (an EventSource cannot send the token) and
// resumes after the last id with Last-Event-ID when the stream drops. onEvent gets
// {type, data} for job, decision and node events and {type: 'reset'} when what is shown must be
// reloaded (a resume the server could not serve, or a drop). onStatus gets 'live',
// 'reconnecting' or 'unauthenticated'. Returns a function that stops it.
export function followEvents(onEvent, onStatus) {
  let stopped = false;
  let lastId = null;
  let retryMs = 3000;
  let controller = null;
  (async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const extra = lastId ? { 'Last-Event-ID': lastId } : {};
        const response = await fetch('/v1/events', {
          headers: headers(extra),
          signal: controller.signal,
        });
        if (response.status === 401) {
          onStatus('unauthenticated');
          return;
        }
        if (!response.ok) throw new ApiError(response.status, null);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer = parseFrames(buffer + value, (frame) => {
            if (frame.retry) retryMs = frame.retry;
            if (frame.id) lastId = frame.id;
            if (frame.event === 'open') {
              onStatus('live');
            } else if (frame.event === 'reset' || frame.event === 'dropped') {
              onStatus('live');
              onEvent({ type: 'reset' });
            } else {
              let data = null;
              try {
                data = JSON.parse(frame.data);
              } catch {
                return;
              }
              onEvent({ type: frame.event, data });
            }
          });
        }
      } catch {
        if (stopped) return;
      }
      if (stopped) return;
      onStatus('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  })();
  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}
