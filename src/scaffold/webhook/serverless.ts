/**
 * What the first `create webhook` inserts into serverless.yml: the `forwarderRoleArn` param,
 * the webhooks function, the permission that lets only the forwarder's role invoke it, and its
 * ARN as a stack output. Pure text.
 */

export const FORWARDER_ROLE_PARAM = `# IAM role ARN of the forwarder (IRSA / Pod Identity): the only identity allowed to invoke the
# webhooks function. Required to deploy: --param="forwarderRoleArn=arn:aws:iam::<account>:role/<role>".
forwarderRoleArn: ''`;

export const WEBHOOKS_SERVERLESS_FUNCTION = `webhooks:
  handler: functions/webhooks.handler
  description: Admission and conversion webhooks, invoked by the forwarder's webhook endpoint
  # Below the webhooks' timeoutSeconds (10) minus the forwarder's margin: a slow call ends as a
  # Lambda timeout the forwarder reports, not as the API server giving up.
  timeout: 9`;

export const WEBHOOKS_INVOKE_PERMISSION = `# The forwarder's role may invoke the webhooks function, and nothing else does.
WebhooksInvokePermission:
  Type: AWS::Lambda::Permission
  Properties:
    FunctionName: !GetAtt WebhooksLambdaFunction.Arn
    Action: lambda:InvokeFunction
    Principal: \${param:forwarderRoleArn}`;

export const WEBHOOKS_OUTPUT = `WebhooksFunctionArn:
  Description: The forwarder's settings.webhooks.functions target (infra/forwarder/webhooks.yaml)
  Value: !GetAtt WebhooksLambdaFunction.Arn`;
