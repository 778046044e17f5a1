// Microsoft's Azure SDK (@azure/storage-blob) as an outside oracle for the Azure Blob tests: it
// reads what etcdadm wrote and writes what etcdadm must read, on the account given by
// AZURE_STORAGE_CONNECTION_STRING. Usage:
//   node azure_oracle.js list CONTAINER [PREFIX]        -> JSON [{name, size, committed}] on stdout
//   node azure_oracle.js blocks CONTAINER BLOB          -> JSON {committed: [...], uncommitted: [...]}
//   node azure_oracle.js download CONTAINER BLOB FILE
//   node azure_oracle.js upload CONTAINER BLOB FILE
//   node azure_oracle.js create-container CONTAINER
//   node azure_oracle.js sas CONTAINER PERMISSIONS      -> a container SAS token (e.g. "racwdl") valid 1 h
"use strict";
const {
  BlobServiceClient,
  ContainerSASPermissions,
  StorageSharedKeyCredential,
  generateBlobSASQueryParameters,
} = require("@azure/storage-blob");

async function main() {
  const [command, container, name, file] = process.argv.slice(2);
  const service = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING);
  const c = service.getContainerClient(container);
  switch (command) {
    case "list": {
      const out = [];
      for await (const b of c.listBlobsFlat({ prefix: name || undefined })) {
        out.push({ name: b.name, size: b.properties.contentLength });
      }
      console.log(JSON.stringify(out));
      break;
    }
    case "blocks": {
      const list = await c.getBlockBlobClient(name).getBlockList("all");
      const names = (blocks) => (blocks || []).map((b) => b.name);
      console.log(JSON.stringify({ committed: names(list.committedBlocks), uncommitted: names(list.uncommittedBlocks) }));
      break;
    }
    case "download":
      await c.getBlobClient(name).downloadToFile(file);
      break;
    case "upload":
      await c.getBlockBlobClient(name).uploadFile(file);
      break;
    case "create-container":
      await c.create();
      break;
    case "sas": {
      const parts = Object.fromEntries(
        process.env.AZURE_STORAGE_CONNECTION_STRING.split(";").filter((p) => p.includes("=")).map((p) => {
          const i = p.indexOf("=");
          return [p.slice(0, i), p.slice(i + 1)];
        }));
      const credential = new StorageSharedKeyCredential(parts.AccountName, parts.AccountKey);
      const sas = generateBlobSASQueryParameters(
        { containerName: container, permissions: ContainerSASPermissions.parse(name), expiresOn: new Date(Date.now() + 3600e3) },
        credential);
      console.log(sas.toString());
      break;
    }
    default:
      throw new Error("unknown command " + command);
  }
}

main().catch((e) => {
  console.error(e.message || String(e));
  process.exit(1);
});
