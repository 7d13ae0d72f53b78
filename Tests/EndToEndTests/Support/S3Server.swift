import Foundation

/// An S3-compatible server on a free 127.0.0.1 port: moto's (`moto_server`,
/// the Python package moto[server], which `make test` installs), with
/// signature checking on: a user with an access key and a bucket are made
/// first (moto lets the first few requests through unsigned), and from then
/// on every request must be signed with that key (AWS Signature Version 4).
final class S3Server {
    let port: Int
    let bucket: String
    private(set) var accessKey = ""
    private(set) var secretKey = ""
    private let work: TemporaryDirectory
    private var process: Process?

    var endpoint: String { "http://127.0.0.1:\(port)" }
    /// The remote's URL for `prefix`.
    func remote(_ prefix: String = "images") -> String { "s3://\(bucket)/\(prefix)?endpoint=\(endpoint)&region=us-east-1" }
    /// The environment imgcache reads the credentials from.
    var credentials: [String: String] { ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey] }

    init(bucket: String = "fleet") throws {
        self.bucket = bucket
        work = try TemporaryDirectory("imgcache-s3")
        var environment = ProcessInfo.processInfo.environment
        // The requests that set the server up (user, key, policy); every later one is checked.
        environment["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
        guard let started = try ServerProcess.start(environment: environment, { port in
            ["python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)]
        }) else { throw NginxServer.ServerError.didNotStart("moto_server did not start") }
        (process, port) = (started.process, started.port)
        try setUp()
    }

    /// Makes the user, its key and policy (the unsigned requests), then the bucket, signed.
    private func setUp() throws {
        let script = """
            import boto3, json, sys
            endpoint = sys.argv[1]
            plain = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
            iam = boto3.client("iam", **plain)
            iam.create_user(UserName="fleet")
            key = iam.create_access_key(UserName="fleet")["AccessKey"]
            policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
            iam.put_user_policy(UserName="fleet", PolicyName="s3", PolicyDocument=json.dumps(policy))
            s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
            s3.create_bucket(Bucket=sys.argv[2])
            print(key["AccessKeyId"], key["SecretAccessKey"])
            """
        let output = try python(script, [endpoint, bucket])
        let parts = output.split(separator: " ").map(String.init)
        guard parts.count == 2 else { throw NginxServer.ServerError.didNotStart("moto set-up failed: \(output)") }
        (accessKey, secretKey) = (parts[0], parts[1])
    }

    /// The names of the objects under the bucket, and their bytes, read with boto3 (through files:
    /// large objects make long lines, slow to split).
    func objects() throws -> [String: Data] {
        let folder = work.appending("objects-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = """
            import boto3, os, sys
            s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                              aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4])
            for number, item in enumerate(s3.list_objects_v2(Bucket=sys.argv[2]).get("Contents", [])):
                body = s3.get_object(Bucket=sys.argv[2], Key=item["Key"])["Body"].read()
                os.makedirs(sys.argv[5], exist_ok=True)
                with open(os.path.join(sys.argv[5], str(number)), "wb") as out:
                    out.write(body)
                print(number, item["Key"])
            """
        var objects: [String: Data] = [:]
        for line in try python(script, [endpoint, bucket, accessKey, secretKey, folder]).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2, let data = FileManager.default.contents(atPath: folder + "/" + parts[0]) { objects[parts[1]] = data }
        }
        return objects
    }

    /// The names of the objects under the bucket, without their bytes.
    func keys() throws -> [String] {
        let script = """
            import boto3, sys
            s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                              aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4])
            for item in s3.list_objects_v2(Bucket=sys.argv[2]).get("Contents", []):
                print(item["Key"])
            """
        return try python(script, [endpoint, bucket, accessKey, secretKey]).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    func python(_ script: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: work.appending("python.log")) ?? FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func stop() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit { stop() }
}
