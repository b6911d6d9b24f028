-- A session is one sign-in: its refresh tokens, rotated one after the
-- other, share the session id, which its access tokens carry too. A
-- password change ends every session of the account but the one making it.
ALTER TABLE refresh_tokens
    ADD COLUMN session_id uuid NOT NULL DEFAULT gen_random_uuid();

CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id);
