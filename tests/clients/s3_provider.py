"""Sets up a provider's S3 bucket on a moto server that enforces
signatures after its first few actions: an IAM user with an access key
allowed to read, a bucket, and the given files under a prefix.

usage: s3_provider.py ENDPOINT BUCKET PREFIX FILE...
prints {"access_key_id": ..., "secret_access_key": ...} as JSON.
Five actions before the files, one per file: moto's
INITIAL_NO_AUTH_ACTION_COUNT must be 5 plus the number of files.
"""
import json
import os
import sys

import boto3

endpoint, bucket, prefix, *files = sys.argv[1:]
setup = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **setup)
iam.create_user(UserName="connector")
key = iam.create_access_key(UserName="connector")["AccessKey"]
policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}]}
iam.put_user_policy(UserName="connector", PolicyName="read", PolicyDocument=json.dumps(policy))
s3 = boto3.client("s3", **setup)
s3.create_bucket(Bucket=bucket)
s3.list_buckets()
for path in files:
    with open(path, "rb") as f:
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{os.path.basename(path)}", Body=f.read())
print(json.dumps({"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}))
