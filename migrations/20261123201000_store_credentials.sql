-- Object-store connectors sign their requests with stored keys: an AWS
-- access key (its id in `username`), a GCS service-account key or an
-- Azure storage account key, each sealed like the other secrets.
ALTER TABLE connector_credentials DROP CONSTRAINT connector_credentials_method_check;
ALTER TABLE connector_credentials ADD CONSTRAINT connector_credentials_method_check
    CHECK (method IN ('bearer', 'basic', 'header', 'aws_access_key', 'gcs_service_account', 'azure_access_key'));
