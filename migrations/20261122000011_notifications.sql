-- Notification channels (SMTP, webhook) and which events go to them.
-- Passwords and signing secrets are sealed by the service.
CREATE TABLE notification_settings (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    smtp jsonb,
    smtp_password bytea,
    webhook_url text,
    webhook_secret bytea,
    events text[] NOT NULL DEFAULT '{job_failed}',
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO notification_settings DEFAULT VALUES;
