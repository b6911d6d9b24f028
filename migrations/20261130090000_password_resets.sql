-- One-time links that set a new password: made by an admin for an account
-- (shown to the admin to pass on) or, when mail is configured, mailed to
-- the account's address on request. Only the token's hash is kept.
CREATE TABLE password_resets (
    token_hash bytea PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz
);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);
