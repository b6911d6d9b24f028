// The one way the UI talks to the API: the access token lives in memory
// only; the refresh token is an httpOnly cookie (cookie mode), renewed with
// the CSRF value the API sets beside it. Errors are the API's problem
// documents, shown to people as their `detail`.
import type { components } from "./api-types";

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

export function useToken(token: string): void {
  accessToken = token;
}

/** A new access token from the refresh cookie; false when there is no session. */
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

/** A request to the API with the session's token; one refresh on 401. */
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const send = () => {
    const headers = new Headers(init.headers);
    if (accessToken) headers.set("Authorization", `Bearer ${accessToken}`);
    return fetch(path, { ...init, headers, credentials: "same-origin" });
  };
  let response = await send();
  if (response.status === 401 && accessToken && (await refresh())) response = await send();
  if (!response.ok) throw await problemOf(response);
  return response;
}

export async function get<T>(path: string): Promise<T> {
  return (await request(path)).json();
}

export async function send<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await request(path, {
    method,
    headers: body === undefined ? headers : { ...headers, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.status === 204 ? (undefined as T) : response.json();
}

/** A document with its entity tag, for a change that must not overwrite
 * someone else's: the tag goes back in `If-Match`. */
export async function getTagged<T>(path: string): Promise<{ value: T; etag: string }> {
  const response = await request(path);
  return { value: await response.json(), etag: response.headers.get("ETag") ?? "" };
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
    await request("/api/auth/logout", { method: "POST", headers: COOKIE_MODE });
  } finally {
    accessToken = null;
  }
}

/** Uploads a form with byte progress (fetch reports none while sending). */
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
