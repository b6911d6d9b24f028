// The one way the UI talks to the API: the access token lives in memory
// only; the refresh token is an httpOnly cookie (cookie mode), renewed with
// the CSRF value the API sets beside it. Errors are the API's problem
// documents, shown to people as their `detail`.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "../api-types";

export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];
export type User = Schemas["UserResponse"];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Partial<Problem>,
  ) {
    super(problem.detail || problem.title || `The service answered ${status}.`);
  }
}

let accessToken: string | null = null;
const COOKIE_MODE = { "X-Service-Auth-Mode": "cookie" };

function csrfCookie(): string | null {
  const found = document.cookie.split(";").map((c) => c.trim().split("=")).find(([k]) => k === "csrf_token");
  return found ? decodeURIComponent(found[1] ?? "") : null;
}

export function hasToken(): boolean {
  return accessToken !== null;
}

/** The session's Authorization header, for requests the map library makes. */
export function authHeaders(): Record<string, string> {
  return accessToken ? { Authorization: `Bearer ${accessToken}` } : {};
}

export function setAccessToken(token: string): void {
  accessToken = token;
}

/** A new access token from the refresh cookie; false when there is no session.
 * Sign-in, refresh and sign-out go by plain fetch, outside the client: they
 * carry no bearer token and never retry (the refresh is what retries). */
export async function refresh(): Promise<boolean> {
  const csrf = csrfCookie();
  if (!csrf) return false;
  const response = await fetch("/api/auth/refresh", {
    method: "POST",
    headers: { ...COOKIE_MODE, "X-CSRF-Token": csrf },
    credentials: "same-origin",
  });
  if (!response.ok) {
    accessToken = null;
    return false;
  }
  accessToken = (await response.json()).access_token;
  return true;
}

async function problemOf(response: Response): Promise<ApiError> {
  let problem: Partial<Problem> = {};
  try {
    problem = await response.json();
  } catch {
    problem = { detail: `${response.status} ${response.statusText}` };
  }
  return new ApiError(response.status, problem);
}

function withToken(request: Request): Request {
  if (accessToken) request.headers.set("Authorization", `Bearer ${accessToken}`);
  return request;
}

/** An answer as the app takes it: after a 401, one refresh and a second
 * try (`again`, the request as it was before the token); a problem thrown
 * for any failure. */
async function settled(response: Response, again: Request): Promise<Response> {
  if (response.status === 401 && accessToken && (await refresh())) response = await fetch(withToken(again));
  if (!response.ok) throw await problemOf(response);
  return response;
}

/** Requests kept unsent by id, for the second try (a body is read once). */
const unsent = new Map<string, Request>();

const session: Middleware = {
  onRequest({ request, id }) {
    unsent.set(id, request.clone());
    return withToken(request);
  },
  onResponse({ response, id }) {
    const again = unsent.get(id)!;
    unsent.delete(id);
    return settled(response, again);
  },
  onError({ id }) {
    unsent.delete(id);
  },
};

/** Where the API is: the client's base, and the start of the addresses of
 * links to its files. */
export const API_BASE = "/api";

/** One typed call per endpoint of the API's document (`paths`), with the
 * session's token, one refresh on 401 and the API's problem thrown. */
export const client = createClient<paths>({ baseUrl: API_BASE, credentials: "same-origin" });
client.use(session);

/** A call's body: the middleware has thrown for every failure. Where the
 * document leaves a body undescribed, `T` names what the API sends. */
export async function data<T>(call: Promise<{ data?: T }>): Promise<T> {
  return (await call).data as T;
}

/** A call outside the typed client (each caller says why), with the same
 * token, refresh and problems. */
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const again = new Request(path, { ...init, credentials: "same-origin" });
  return settled(await fetch(withToken(again.clone())), again);
}

export async function signIn(username: string, password: string): Promise<void> {
  const response = await fetch("/api/auth/login", {
    method: "POST",
    headers: { ...COOKIE_MODE, "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ username, password }),
    credentials: "same-origin",
  });
  if (!response.ok) throw await problemOf(response);
  accessToken = (await response.json()).access_token;
}

/** Ends this browser's sign-in only; the account's other devices stay signed in. */
export async function signOut(): Promise<void> {
  try {
    await fetch("/api/auth/logout/session", {
      method: "POST",
      headers: { ...COOKIE_MODE, "X-CSRF-Token": csrfCookie() ?? "" },
      credentials: "same-origin",
    });
  } finally {
    accessToken = null;
  }
}

/** Ends every sign-in of the account, on every device (API keys stay). */
export async function signOutEverywhere(): Promise<void> {
  try {
    // Not by the client: cookie mode sends no body, which the document's RefreshRequest requires.
    await request("/api/auth/logout", { method: "POST", headers: COOKIE_MODE });
  } finally {
    accessToken = null;
  }
}

/** Uploads a form with byte progress (fetch reports none while sending):
 * by XHR, outside the client, whose document types the file as a string. */
export function upload(
  path: string,
  form: FormData,
  onProgress: (sent: number, total: number) => void,
): Promise<Schemas["JobAccepted"]> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    if (accessToken) xhr.setRequestHeader("Authorization", `Bearer ${accessToken}`);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.total);
    xhr.onload = () => {
      let body: unknown = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = { detail: `${xhr.status} ${xhr.statusText}` };
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body as Schemas["JobAccepted"]);
      else reject(new ApiError(xhr.status, body as Partial<Problem>));
    };
    xhr.onerror = () => reject(new ApiError(0, { detail: "The upload was cut off: the service could not be reached." }));
    xhr.send(form);
  });
}
