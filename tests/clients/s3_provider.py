"""Sets up two parties on a moto server that enforces signatures after
its first few actions: a provider's bucket holding the given files under
a prefix, readable with the "connector" user's key, and the service's own
bucket "catalog", which the "service" user's key may do anything in.

usage: s3_provider.py ENDPOINT BUCKET PREFIX FILE...
prints {"connector": {access_key_id, secret_access_key}, "service": {...}}.
Nine actions before the files, one per file: moto's
INITIAL_NO_AUTH_ACTION_COUNT must be 9 plus the number of files.
"""
import json
import os
import sys

import boto3

endpoint, bucket, prefix, *files = sys.argv[1:]
setup = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **setup)


def user(name, actions):
    iam.create_user(UserName=name)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]}
    iam.put_user_policy(UserName=name, PolicyName="access", PolicyDocument=json.dumps(policy))
    return {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}


keys = {"connector": user("connector", ["s3:GetObject", "s3:ListBucket"]), "service": user("service", ["s3:*"])}
s3 = boto3.client("s3", **setup)
s3.create_bucket(Bucket=bucket)
s3.create_bucket(Bucket="catalog")
for path in files:
    with open(path, "rb") as f:
        s3.put_object(Bucket=bucket, Key=f"{prefix}/{os.path.basename(path)}", Body=f.read())
print(json.dumps(keys))
