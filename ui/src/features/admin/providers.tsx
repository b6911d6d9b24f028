import { useState, type FormEvent } from "react";
import { client, data, type Schemas } from "../../lib/api";
import { isAdmin, useSession } from "../../lib/session";
import { AdminScreen } from "./admin";
import { ErrorNote, useAction, useLoad } from "../../components/common";

type Provider = Schemas["ProviderResponse"];
const TYPES: [string, string][] = [
  ["oidc", "OpenID Connect (discovery)"],
  ["idp_a", "idp_a"],
  ["idp_b", "idp_b"],
  ["idp_c", "idp_c"],
];
const EMPTY = { slug: "", display_name: "", provider_type: "oidc", client_id: "", client_secret: "", discovery_url: "", default_role: "viewer" };

/** One provider: edit its name, role and state, rotate its secret, or delete it. */
function ProviderRow({ provider, onChange }: { provider: Provider; onChange: () => void }) {
  const [name, setName] = useState(provider.display_name);
  const [secret, setSecret] = useState("");
  const [note, setNote] = useState<string | null>(null);
  const action = useAction();
  const update = (body: Schemas["ProviderInput"], done: string) => {
    setNote(null);
    return action.run(async () => {
      await client.PUT("/settings/oauth-providers/{provider_id}", { params: { path: { provider_id: provider.id } }, body });
      setNote(done);
      onChange();
    });
  };
  const remove = () => {
    if (!window.confirm(`Delete the provider “${provider.display_name}”? People who sign in with it can no longer.`)) return;
    action.run(async () => {
      await client.DELETE("/settings/oauth-providers/{provider_id}", { params: { path: { provider_id: provider.id } } });
      onChange();
    });
  };
  return (
    <li className="card provider">
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          update({ display_name: name }, "Saved.");
        }}
      >
        <h2>{provider.display_name}</h2>
        <p className="meta">
          <span className="tag">{provider.provider_type}</span>
          <span className="tag">{provider.enabled ? "enabled" : "disabled"}</span>
          <span>slug {provider.slug}</span>
        </p>
        <p className="meta">Callback URL to register with the provider: <code>{provider.callback_url}</code></p>
        <label>
          Display name of {provider.slug}
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </label>
        <div className="row">
          <button type="submit">Save name</button>
          <button type="button" onClick={() => update({ enabled: !provider.enabled }, provider.enabled ? "Disabled." : "Enabled.")}>
            {provider.enabled ? `Disable ${provider.slug}` : `Enable ${provider.slug}`}
          </button>
          <button type="button" className="danger" onClick={remove}>
            Delete {provider.slug}
          </button>
        </div>
        <div className="row">
          <label className="grow">
            New client secret for {provider.slug}
            <input type="password" value={secret} onChange={(e) => setSecret(e.target.value)} autoComplete="off" />
          </label>
          <button
            type="button"
            disabled={!secret}
            onClick={() => update({ client_secret: secret }, "Secret rotated.").then(() => setSecret(""))}
          >
            Rotate secret
          </button>
        </div>
        <ErrorNote error={action.error} />
        {note && <p role="status">{note}</p>}
      </form>
    </li>
  );
}

/** Single sign-on providers: what the sign-in page offers, changed with no restart. */
export function AdminProviders() {
  const { user } = useSession();
  const providers = useLoad(
    () => (isAdmin(user) ? data(client.GET("/settings/oauth-providers")) : Promise.resolve([])),
    [user?.id],
  );
  const [form, setForm] = useState(EMPTY);
  const action = useAction();
  const field = (name: keyof typeof EMPTY) => ({
    value: form[name],
    onChange: (e: { target: { value: string } }) => setForm({ ...form, [name]: e.target.value }),
  });
  const create = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      // The form holds the selects' values as text; the API checks them.
      const body = { ...form, discovery_url: form.discovery_url || undefined } as Schemas["NewProvider"];
      await client.POST("/settings/oauth-providers", { body });
      setForm(EMPTY);
      providers.reload();
    });
  };
  return (
    <AdminScreen title="Sign-in providers">
      <ErrorNote error={providers.error} />
      <ul className="cards">
        {(Array.isArray(providers.value) ? providers.value : []).map((p) => (
          <ProviderRow key={p.id} provider={p} onChange={providers.reload} />
        ))}
      </ul>
      {providers.value?.length === 0 && <p>No provider: people sign in with a password.</p>}
      <form onSubmit={create} className="stack" aria-labelledby="new-provider">
        <h2 id="new-provider">Add a provider</h2>
        <label>
          Type
          <select {...field("provider_type")}>
            {TYPES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Slug
          <input {...field("slug")} pattern="[a-z0-9\-]+" required />
        </label>
        <label>
          Display name
          <input {...field("display_name")} required />
        </label>
        <label>
          Client ID
          <input {...field("client_id")} required />
        </label>
        <label>
          Client secret
          <input type="password" {...field("client_secret")} autoComplete="off" required />
        </label>
        {form.provider_type === "oidc" && (
          <label>
            Discovery URL
            <input type="url" {...field("discovery_url")} required />
          </label>
        )}
        <label>
          Role of new accounts
          <select {...field("default_role")}>
            <option value="viewer">viewer</option>
            <option value="editor">editor</option>
          </select>
        </label>
        <ErrorNote error={action.error} />
        <button type="submit">Add provider</button>
      </form>
    </AdminScreen>
  );
}
