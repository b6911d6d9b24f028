-- Single sign-on: provider configurations (client secrets encrypted),
-- links between provider identities and accounts, sign-ins in flight
-- (state, PKCE verifier, nonce), and the auth settings.
CREATE TABLE oauth_providers (
    id uuid PRIMARY KEY,
    slug text NOT NULL UNIQUE,
    display_name text NOT NULL,
    provider_type text NOT NULL CHECK (provider_type IN ('idp_a', 'idp_b', 'idp_c', 'oidc')),
    client_id text NOT NULL,
    client_secret bytea NOT NULL,
    discovery_url text,
    authorize_url text,
    token_url text,
    userinfo_url text,
    scopes text NOT NULL,
    default_role text NOT NULL DEFAULT 'viewer' CHECK (default_role IN ('viewer', 'editor', 'admin')),
    enabled boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_accounts (
    id uuid PRIMARY KEY,
    provider_id uuid NOT NULL REFERENCES oauth_providers (id) ON DELETE CASCADE,
    subject text NOT NULL,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email text,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_login_at timestamptz,
    UNIQUE (provider_id, subject)
);
CREATE INDEX oauth_accounts_user_idx ON oauth_accounts (user_id);

CREATE TABLE oauth_logins (
    state text PRIMARY KEY,
    provider_id uuid NOT NULL REFERENCES oauth_providers (id) ON DELETE CASCADE,
    code_verifier text NOT NULL,
    nonce text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE auth_settings (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    password_login_enabled boolean NOT NULL DEFAULT true,
    allowed_email_domains text[] NOT NULL DEFAULT '{}',
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO auth_settings DEFAULT VALUES;
